#include "graph/planner/device_copies.hpp"

#include <algorithm>
#include <any>
#include <map>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

namespace weir::internal {

namespace {

Device StreamDevice(const Plan& plan, int task) {
  return plan.streams[static_cast<std::size_t>(plan.tasks[static_cast<std::size_t>(task)].stream)].device;
}

// Where a task's kernel reads and writes: its device's memory for a kernel on a CUDA device, the host
// for everything else (the sink, the input actors, kernels on CPU devices).
Device MemoryOf(const Plan& plan, int task) {
  const TaskDesc& desc = plan.tasks[static_cast<std::size_t>(task)];
  const Device device = StreamDevice(plan, task);
  const bool on_device = desc.kind == TaskKind::kKernel || desc.kind == TaskKind::kVariable;
  return on_device && device.kind == Device::Kind::kCuda ? device : Device::Cpu();
}

int StreamOf(Plan& plan, Device device, StreamKind kind) {
  const StreamId id{device, kind, 0};
  const auto it = std::find(plan.streams.begin(), plan.streams.end(), id);
  if (it != plan.streams.end()) return static_cast<int>(it - plan.streams.begin());
  plan.streams.push_back(id);
  return static_cast<int>(plan.streams.size()) - 1;
}

// A copy actor from register `source` into a new register in `to`'s memory; returns the new register.
int AddCopy(Plan& plan, int source, Device to, std::size_t copy_stream_bytes) {
  static const std::any kNoAttrs;
  const RegisterDesc from = plan.registers[static_cast<std::size_t>(source)];
  // A host-to-device copy runs on the destination device's stream, a device-to-host one on the source's,
  // and one from another GPU of the process on the destination's device-to-device stream (a peer copy
  // where the GPUs can reach each other, staged through the host by CUDA otherwise). A small copy
  // between host and device runs on the device's compute stream instead, in order with its kernels:
  // handing a register between two streams costs a host round trip (the event seen complete, then
  // the consumer's launch), which is more than such a copy overlapping the kernels would save, and on
  // the compute stream the copy joins the stream's CUDA graph.
  const bool to_device = to.kind == Device::Kind::kCuda;
  const bool from_device = from.device.kind == Device::Kind::kCuda;
  const Device device = to_device ? to : from.device;
  const bool inline_copy = from_device != to_device && from.slot_bytes <= copy_stream_bytes;
  const StreamKind kind = inline_copy  ? StreamKind::kCompute
                          : !to_device ? StreamKind::kDeviceToHost
                          : from_device ? StreamKind::kDeviceToDevice
                                        : StreamKind::kHostToDevice;
  const int stream = StreamOf(plan, device, kind);

  TaskDesc task;
  task.id = static_cast<int>(plan.tasks.size());
  task.kind = TaskKind::kKernel;
  task.name = fmt::format("{}:to_{}", from.name, to_device ? to.ToString() : std::string("host"));
  task.stream = stream;
  task.op_type = "device_copy";
  task.attrs = &kNoAttrs;
  task.input_metas = {from.meta};
  task.output_metas = {from.meta};
  task.input_slots = {0};
  task.consumed = {source};
  task.kernel_factory = FindKernel({task.op_type, device.kind, from.meta.dtype});
  if (task.kernel_factory == nullptr) {
    throw std::invalid_argument(fmt::format("[compile] no {} copy kernel for {} ('{}'): this build has no CUDA",
                                            device.ToString(), from.meta.dtype, from.name));
  }

  RegisterDesc copy;
  copy.id = static_cast<int>(plan.registers.size());
  copy.name = task.name + "/out";
  copy.producer = task.id;
  copy.register_num = 2;  // the copy of the next call overlaps this call's consumers
  copy.meta = from.meta;
  copy.slot_bytes = from.slot_bytes;
  copy.device = to;
  copy.pinned = !to_device;
  task.produced = {copy.id};

  RegisterDesc& source_desc = plan.registers[static_cast<std::size_t>(source)];
  source_desc.consumers.push_back(task.id);
  if (!from_device) source_desc.pinned = true;
  // Two slots where a copy reads (a variable has its one): the producer works on the next call while
  // the copy stream moves this one.
  if (source_desc.variable.empty()) source_desc.register_num = std::max(source_desc.register_num, 2);
  plan.tasks.push_back(std::move(task));
  plan.registers.push_back(std::move(copy));
  return plan.registers.back().id;
}

}  // namespace

void AddDeviceCopies(Plan& plan, std::size_t copy_stream_bytes) {
  for (RegisterDesc& reg : plan.registers) reg.device = MemoryOf(plan, reg.producer);
  std::map<std::pair<int, int>, int> copies;  // (register, device index or -1 for the host) -> its copy
  const std::size_t registers = plan.registers.size();  // the copies' own registers need none
  for (std::size_t r = 0; r < registers; ++r) {
    if (plan.registers[r].slot_bytes == 0) continue;  // ticks and control edges carry no data
    const std::vector<int> consumers = plan.registers[r].consumers;
    for (int consumer : consumers) {
      const Device need = MemoryOf(plan, consumer);
      if (need == plan.registers[r].device) continue;
      const std::pair<int, int> key{static_cast<int>(r), need.kind == Device::Kind::kCuda ? need.index : -1};
      auto [it, inserted] = copies.try_emplace(key, -1);
      if (inserted) it->second = AddCopy(plan, static_cast<int>(r), need, copy_stream_bytes);
      // The consumer reads the copy in the register's place (same consumed index: its kernel's input
      // slots stay right).
      TaskDesc& task = plan.tasks[static_cast<std::size_t>(consumer)];
      std::replace(task.consumed.begin(), task.consumed.end(), static_cast<int>(r), it->second);
      std::erase(plan.registers[r].consumers, consumer);
      plan.registers[static_cast<std::size_t>(it->second)].consumers.push_back(consumer);
    }
  }
}

}  // namespace weir::internal
