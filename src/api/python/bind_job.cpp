// weir._C: blobs, job builders, ops and layers. A thin mapping of include/weir/{job,ops,layers}.hpp;
// Python-side conveniences (names, scopes, defaults) live in python/weir.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "api/python/bind.hpp"
#include "api/python/convert.hpp"
#include "weir/job.hpp"
#include "weir/layers.hpp"
#include "weir/ops.hpp"
#include "weir/optimizers.hpp"

namespace weir::python {

namespace {

py::tuple ShapeTuple(const Shape& shape) {
  py::tuple tuple(shape.Rank());
  for (int i = 0; i < shape.Rank(); ++i) tuple[static_cast<std::size_t>(i)] = py::int_(shape[i]);
  return tuple;
}

/// A watch handler called with the blob's value; the Python handler runs under the GIL.
std::function<void(const Tensor&)> WatchHandler(py::object handler) {
  return [callable = PyCallable(std::move(handler))](const Tensor& value) {
    py::gil_scoped_acquire gil;
    callable.Object()(ToArray(value));
  };
}

Activation ParseActivation(const std::string& name) {
  if (name.empty() || name == "none") return Activation::kNone;
  if (name == "relu") return Activation::kRelu;
  if (name == "sigmoid") return Activation::kSigmoid;
  if (name == "tanh") return Activation::kTanh;
  throw std::invalid_argument("[dense] activation: expected one of none, relu, sigmoid, tanh, got '" + name + "'");
}

}  // namespace

void BindJob(py::module_& m) {
  py::enum_<JobType>(m, "JobType").value("predict", JobType::kPredict).value("train", JobType::kTrain);

  py::class_<Blob>(m, "Blob")
      .def_property_readonly("shape", [](const Blob& b) { return ShapeTuple(b.GetShape()); })
      .def_property_readonly("dtype", &Blob::GetDType)
      .def_property_readonly("name", &Blob::Name)
      .def_property_readonly("placement",
                             [](const Blob& b) -> py::object {
                               const std::optional<Placement> placement = b.GetPlacement();
                               if (!placement) return py::none();
                               return py::make_tuple(placement->DeviceTag(), placement->Ids());
                             })
      .def_property_readonly("defined", &Blob::Defined)
      .def("same_job", [](const Blob& a, const Blob& b) { return a.Graph() == b.Graph(); });

  py::class_<Regularizer>(m, "Regularizer")
      .def(py::init([](double l1, double l2) { return Regularizer{l1, l2}; }), py::arg("l1") = 0.0, py::arg("l2") = 0.0)
      .def_readonly("l1", &Regularizer::l1)
      .def_readonly("l2", &Regularizer::l2);

  py::class_<Distribute>(m, "Distribute")
      .def(py::init([](const std::string& kind, int axis) {
             if (kind == "auto") return Distribute::Auto();
             if (kind == "broadcast") return Distribute::Broadcast();
             if (kind == "split") return Distribute::Split(axis);
             throw std::invalid_argument(fmt::format("[distribute] kind must be auto, broadcast or split, got '{}'", kind));
           }),
           py::arg("kind"), py::arg("axis") = 0);

  m.def(
      "mixed_precision_dtype",
      [](bool on_cuda) { return MixedPrecisionDType(on_cuda ? Device::Kind::kCuda : Device::Kind::kCpu); },
      py::arg("on_cuda"));
  py::class_<Job>(m, "Job")
      .def_property_readonly("name", &Job::Name)
      .def_property_readonly("mixed_precision_ops", &Job::MixedPrecisionOps)
      .def_property_readonly("quantized_values", &Job::QuantizedValues)
      .def_property_readonly("type", &Job::Type)
      .def_property_readonly("output_names", &Job::OutputNames)
      .def_property_readonly("placeholders", [](const Job& job) {
        py::list list;
        for (const PlaceholderInfo& p : job.Placeholders()) list.append(py::make_tuple(p.name, ShapeTuple(p.shape), p.dtype));
        return list;
      });

  using Qat = JobConfig::QuantizationAwareTraining;
  py::class_<Qat>(m, "QuantizationAwareTraining")
      .def(py::init<>())
      .def_readwrite("symmetric", &Qat::symmetric)
      .def_readwrite("per_channel_weight_quantization", &Qat::per_channel_weight_quantization)
      .def_readwrite("moving_min_max_momentum", &Qat::moving_min_max_momentum)
      .def_readwrite("moving_min_max_stop_update_after_iters", &Qat::moving_min_max_stop_update_after_iters)
      .def_readwrite("target_backend", &Qat::target_backend);

  py::class_<JobBuilder>(m, "JobBuilder")
      .def(py::init([](std::string name, JobType type, DType default_dtype, bool channels_last_convolutions,
                       bool mirrored, std::optional<DType> mixed_precision, bool on_cuda,
                       std::optional<Qat> quantization_aware_training) {
             JobConfig config{.default_dtype = default_dtype,
                              .channels_last_convolutions = channels_last_convolutions,
                              .view = mirrored ? LogicalView::kMirrored : LogicalView::kConsistent,
                              .quantization_aware_training = std::move(quantization_aware_training)};
             if (mixed_precision) {
               config.mixed_precision = JobConfig::MixedPrecision{
                   .dtype = *mixed_precision, .device = on_cuda ? Device::Kind::kCuda : Device::Kind::kCpu};
             }
             return JobBuilder(std::move(name), type, std::move(config));
           }),
           py::arg("name"), py::arg("type"), py::arg("default_dtype") = DType::kF32,
           py::arg("channels_last_convolutions") = true, py::arg("mirrored") = false,
           py::arg("mixed_precision") = std::nullopt, py::arg("on_cuda") = false,
           py::arg("quantization_aware_training") = std::nullopt)
      .def("push_quantization_scope", &JobBuilder::PushQuantizationScope, py::arg("quantize"))
      .def("pop_quantization_scope", &JobBuilder::PopQuantizationScope)
      .def("push_placement",
           [](JobBuilder& b, std::string device_tag, const std::vector<std::string>& machine_device_ids) {
             b.PushPlacement(Placement(std::move(device_tag), machine_device_ids));
           },
           py::arg("device_tag"), py::arg("machine_device_ids"))
      .def("pop_placement", &JobBuilder::PopPlacement)
      .def("placeholder",
           [](JobBuilder& b, std::string name, std::vector<std::int64_t> shape, DType dtype) {
             return b.Placeholder(std::move(name), Shape(std::move(shape)), dtype);
           },
           py::arg("name"), py::arg("shape"), py::arg("dtype"))
      .def("constant",
           [](JobBuilder& b, const py::array& value, std::string name) {
             return b.Constant(CopyArray(value, "constant"), std::move(name));
           },
           py::arg("value"), py::arg("name") = "")
      .def("variable",
           [](JobBuilder& b, const std::string& name, std::vector<std::int64_t> shape, std::optional<DType> dtype,
              const Initializer& initializer, const Regularizer& regularizer, bool trainable, const Distribute& distribute) {
             return b.Variable(name, VariableSpec{.shape = Shape(std::move(shape)),
                                                  .dtype = dtype,
                                                  .initializer = initializer,
                                                  .regularizer = regularizer,
                                                  .trainable = trainable,
                                                  .distribute = distribute});
           },
           py::arg("name"), py::arg("shape"), py::arg("dtype"), py::arg("initializer"), py::arg("regularizer"),
           py::arg("trainable"), py::arg("distribute") = Distribute::Auto())
      .def("minimize", &JobBuilder::Minimize, py::arg("optimizer"), py::arg("loss"))
      .def("output", &JobBuilder::Output, py::arg("name"), py::arg("blob"))
      .def("build", &JobBuilder::Build);

  m.def("watch", [](const Blob& blob, py::object handler) { Watch(blob, WatchHandler(std::move(handler))); },
        py::arg("blob"), py::arg("handler"));
  m.def("watch_diff", [](const Blob& blob, py::object handler) { WatchDiff(blob, WatchHandler(std::move(handler))); },
        py::arg("blob"), py::arg("handler"));

  // Ops: weir._C.add_op (bind_ops.cpp).
  m.def("gradients", &Gradients, py::arg("y"), py::arg("xs"));

  // --- layers (include/weir/layers.hpp)
  m.def("dense",
        [](const Blob& x, std::int64_t units, const std::string& activation, bool use_bias,
           const Initializer& kernel_initializer, const Initializer& bias_initializer,
           const Regularizer& kernel_regularizer, const Regularizer& bias_regularizer, bool trainable,
           std::string name, const Distribute& model_distribute) {
          return Dense(x, units,
                       {.activation = ParseActivation(activation),
                        .use_bias = use_bias,
                        .kernel_initializer = kernel_initializer,
                        .bias_initializer = bias_initializer,
                        .kernel_regularizer = kernel_regularizer,
                        .bias_regularizer = bias_regularizer,
                        .trainable = trainable,
                        .name = std::move(name),
                        .model_distribute = model_distribute});
        },
        py::arg("x"), py::arg("units"), py::arg("activation"), py::arg("use_bias"), py::arg("kernel_initializer"),
        py::arg("bias_initializer"), py::arg("kernel_regularizer"), py::arg("bias_regularizer"), py::arg("trainable"),
        py::arg("name"), py::arg("model_distribute") = Distribute::Auto());
  m.def("dropout",
        [](const Blob& x, double rate, std::uint64_t seed, std::string name) {
          return Dropout(x, {.rate = rate, .seed = seed, .name = std::move(name)});
        },
        py::arg("x"), py::arg("rate"), py::arg("seed") = 0, py::arg("name") = "");
}

}  // namespace weir::python
