// multi_update on the CPU: the members' own update kernels (sgd_update, momentum_update, adam_update
// or rmsprop_update), one after the other in one act. The planner fuses a job's updates so only on
// device streams (graph/fusion.hpp); on CPU device streams this kernel is what runs them, and it is
// the reference the CUDA kernel's one launch is checked against.
#include <any>
#include <memory>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "kernels/attrs/update_attrs.hpp"
#include "kernels/kernel.hpp"

namespace weir::internal {
namespace {

class MultiUpdateCpu final : public Kernel {
 public:
  explicit MultiUpdateCpu(const KernelSetup& setup) : attrs_(setup.Get<MultiUpdateAttrs>()) {
    if (attrs_.members.size() != attrs_.arity.size()) {
      throw std::invalid_argument(fmt::format("[multi_update] '{}': {} members and {} arities", setup.op_name,
                                              attrs_.members.size(), attrs_.arity.size()));
    }
    for (const UpdateAttrs& member : attrs_.members) member_attrs_.emplace_back(member);
    std::size_t offset = 0;
    for (std::size_t j = 0; j < attrs_.members.size(); ++j) {
      const auto arity = static_cast<std::size_t>(attrs_.arity[j]);
      if (offset + arity > setup.inputs.size()) {
        throw std::invalid_argument(fmt::format("[multi_update] '{}': the members take {} inputs or more, got {}",
                                                setup.op_name, offset + arity, setup.inputs.size()));
      }
      const std::span<const TensorMeta> inputs = setup.inputs.subspan(offset, arity);
      const KernelFactory factory = FindKernel({attrs_.update, setup.device.kind, inputs[0].dtype});
      if (factory == nullptr) {
        throw std::invalid_argument(fmt::format("[multi_update] '{}': no {} kernel for {}", setup.op_name, attrs_.update,
                                                inputs[0].dtype));
      }
      KernelSetup member = setup;
      member.op_type = attrs_.update;
      member.attrs = &member_attrs_[j];
      member.inputs = inputs;
      members_.push_back(factory(member));
      offsets_.push_back(offset);
      offset += arity;
    }
  }

  void Run(std::span<const ConstTensorView> inputs, std::span<const TensorView> outputs) override {
    for (std::size_t j = 0; j < members_.size(); ++j) {
      members_[j]->Run(inputs.subspan(offsets_[j], static_cast<std::size_t>(attrs_.arity[j])), outputs);
    }
  }

 private:
  MultiUpdateAttrs attrs_;
  std::vector<std::any> member_attrs_;  // filled before the members are made, which may point into it
  std::vector<std::unique_ptr<Kernel>> members_;
  std::vector<std::size_t> offsets_;
};

WEIR_REGISTER_KERNELS {
  RegisterKernel({"multi_update", Device::Kind::kCpu, DType::kF32}, &MakeKernel<MultiUpdateCpu>);
  RegisterKernel({"multi_update", Device::Kind::kCpu, DType::kF64}, &MakeKernel<MultiUpdateCpu>);
}

}  // namespace
}  // namespace weir::internal
