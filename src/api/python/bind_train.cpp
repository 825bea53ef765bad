// weir._C: initializers, learning-rate schedules and optimizers, as opaque values made by the
// factory functions of include/weir/{initializers,lr_schedule,optimizers}.hpp.
#include <pybind11/stl.h>

#include "api/python/bind.hpp"
#include "api/python/convert.hpp"
#include "weir/initializers.hpp"
#include "weir/lr_schedule.hpp"
#include "weir/optimizers.hpp"

namespace weir::python {

namespace {

using Seed = std::optional<std::uint64_t>;

template <typename Enum>
Enum ParseName(std::string_view what, const std::string& value, std::initializer_list<std::pair<const char*, Enum>> names) {
  std::string expected;
  for (const auto& [name, e] : names) {
    if (value == name) return e;
    expected += expected.empty() ? name : std::string(", ") + name;
  }
  throw std::invalid_argument(fmt::format("{}: expected one of {}, got '{}'", what, expected, value));
}

Initializer::FanMode ParseMode(const std::string& mode) {
  return ParseName<Initializer::FanMode>("mode", mode,
                                         {{"fan_in", Initializer::FanMode::kFanIn},
                                          {"fan_out", Initializer::FanMode::kFanOut},
                                          {"fan_avg", Initializer::FanMode::kFanAvg}});
}

Initializer::Distribution ParseDistribution(const std::string& distribution) {
  return ParseName<Initializer::Distribution>("distribution", distribution,
                                              {{"truncated_normal", Initializer::Distribution::kTruncatedNormal},
                                               {"random_normal", Initializer::Distribution::kRandomNormal},
                                               {"random_uniform", Initializer::Distribution::kRandomUniform}});
}

/// OneFlow's data_format strings: "" and NCHW-likes are channels first, NHWC-likes channels last.
Initializer::DataFormat ParseDataFormat(const std::string& format) {
  if (format.empty() || format == "NCHW" || format == "channels_first" || format == "NCW" || format == "NCDHW") {
    return Initializer::DataFormat::kChannelsFirst;
  }
  if (format == "NHWC" || format == "channels_last" || format == "NWC" || format == "NDHWC") {
    return Initializer::DataFormat::kChannelsLast;
  }
  throw std::invalid_argument(fmt::format("data_format: expected \"\", NCHW or NHWC, got '{}'", format));
}

}  // namespace

void BindTraining(py::module_& m) {
  py::class_<Initializer>(m, "Initializer")
      .def("__repr__", [](const Initializer& init) { return Describe(init); })
      .def("__eq__", [](const Initializer& a, const Initializer& b) { return a == b; })
      // What flow.data.decode_random reads of one (it draws its data as these initializers do).
      .def_property_readonly("distribution",
                             [](const Initializer& init) {
                               switch (init.kind) {
                                 case Initializer::Kind::kConstant: return "constant";
                                 case Initializer::Kind::kRandomUniform: return "uniform";
                                 case Initializer::Kind::kRandomNormal: return "normal";
                                 case Initializer::Kind::kTruncatedNormal: return "truncated_normal";
                                 default: return "";  // draws that depend on a variable's fans
                               }
                             })
      .def_readonly("value", &Initializer::value)
      .def_readonly("minval", &Initializer::minval)
      .def_readonly("maxval", &Initializer::maxval)
      .def_readonly("mean", &Initializer::mean)
      .def_readonly("stddev", &Initializer::stddev);
  m.def("constant_initializer", &ConstantInitializer, py::arg("value"));
  m.def("random_uniform_initializer", &RandomUniformInitializer, py::arg("minval"), py::arg("maxval"),
        py::arg("seed") = Seed());
  m.def("random_normal_initializer", &RandomNormalInitializer, py::arg("mean"), py::arg("stddev"),
        py::arg("seed") = Seed());
  m.def("truncated_normal_initializer", &TruncatedNormalInitializer, py::arg("mean"), py::arg("stddev"),
        py::arg("seed") = Seed());
  m.def("variance_scaling_initializer",
        [](double scale, const std::string& mode, const std::string& distribution, const std::string& data_format,
           Seed seed) {
          return VarianceScalingInitializer(scale, ParseMode(mode), ParseDistribution(distribution),
                                            ParseDataFormat(data_format), seed);
        },
        py::arg("scale"), py::arg("mode"), py::arg("distribution"), py::arg("data_format"), py::arg("seed") = Seed());
  m.def("kaiming_initializer",
        [](const std::string& distribution, const std::string& mode, std::string nonlinearity, double negative_slope,
           const std::string& data_format, Seed seed) {
          return KaimingInitializer(ParseDistribution(distribution), ParseMode(mode), std::move(nonlinearity),
                                    negative_slope, ParseDataFormat(data_format), seed);
        },
        py::arg("distribution"), py::arg("mode"), py::arg("nonlinearity"), py::arg("negative_slope"),
        py::arg("data_format"), py::arg("seed") = Seed());
  m.def("with_seed", &WithSeed, py::arg("initializer"), py::arg("seed"));
  m.def("initialize",
        [](const Initializer& init, std::vector<std::int64_t> shape, DType dtype, std::uint64_t seed) {
          return ToArray(Initialize(init, Shape(std::move(shape)), dtype, seed));
        },
        py::arg("initializer"), py::arg("shape"), py::arg("dtype"), py::arg("seed"));

  py::class_<Warmup>(m, "Warmup").def(py::init<>());
  m.def("constant_warmup", &ConstantWarmup, py::arg("steps"), py::arg("multiplier"));
  m.def("linear_warmup", &LinearWarmup, py::arg("steps"), py::arg("start_multiplier"));

  py::class_<LrSchedule>(m, "LrSchedule")
      .def("__repr__", [](const LrSchedule& s) { return Describe(s); })
      .def("learning_rate", [](const LrSchedule& s, std::int64_t step) { return LearningRate(s, step); },
           py::arg("train_step"));
  m.def("piecewise_constant_scheduler", &PiecewiseConstantScheduler, py::arg("boundaries"), py::arg("values"),
        py::arg("warmup") = Warmup());
  m.def("piecewise_scaling_scheduler",
        py::overload_cast<double, std::vector<std::int64_t>, std::vector<double>, Warmup>(&PiecewiseScalingScheduler),
        py::arg("base_lr"), py::arg("boundaries"), py::arg("scale"), py::arg("warmup") = Warmup());
  m.def("cosine_scheduler", &CosineScheduler, py::arg("base_lr"), py::arg("steps"), py::arg("alpha"),
        py::arg("warmup") = Warmup());
  m.def("polynomial_scheduler", &PolynomialScheduler, py::arg("base_lr"), py::arg("steps"),
        py::arg("end_learning_rate"), py::arg("power"), py::arg("cycle"), py::arg("warmup") = Warmup());
  m.def("exponential_scheduler", &ExponentialScheduler, py::arg("base_lr"), py::arg("steps"), py::arg("decay_rate"),
        py::arg("staircase"), py::arg("warmup") = Warmup());
  m.def("inverse_time_scheduler", &InverseTimeScheduler, py::arg("base_lr"), py::arg("steps"), py::arg("decay_rate"),
        py::arg("staircase"), py::arg("warmup") = Warmup());
  m.def("natural_exp_scheduler", &NaturalExpScheduler, py::arg("base_lr"), py::arg("steps"), py::arg("decay_rate"),
        py::arg("staircase"), py::arg("warmup") = Warmup());
  m.def("linear_cosine_scheduler", &LinearCosineScheduler, py::arg("base_lr"), py::arg("steps"),
        py::arg("num_periods"), py::arg("alpha"), py::arg("beta"), py::arg("warmup") = Warmup());

  py::class_<Optimizer>(m, "Optimizer")
      .def_readwrite("loss_scale_factor", &Optimizer::loss_scale_factor)
      .def("set_dynamic_loss_scale",
           [](Optimizer& o, double initial_loss_scale, std::int64_t increment_period, double multiplier) {
             o.dynamic_loss_scale = Optimizer::DynamicLossScale{initial_loss_scale, increment_period, multiplier};
           },
           py::arg("initial_loss_scale"), py::arg("increment_period"), py::arg("multiplier"))
      .def_readwrite("weight_decay_includes", &Optimizer::weight_decay_includes)
      .def_readwrite("lazy", &Optimizer::lazy)
      .def_readwrite("weight_decay_excludes", &Optimizer::weight_decay_excludes)
      .def_readwrite("variables", &Optimizer::variables)
      .def_readwrite("parts", &Optimizer::parts)
      .def_property_readonly("learning_rate", [](const Optimizer& o) { return o.learning_rate; });
  m.def("sgd", &Sgd, py::arg("learning_rate"), py::arg("momentum"));
  m.def("adam", &Adam, py::arg("learning_rate"), py::arg("beta1"), py::arg("beta2"), py::arg("epsilon"),
        py::arg("do_bias_correction"));
  m.def("adamw", &AdamW, py::arg("learning_rate"), py::arg("weight_decay"), py::arg("beta1"), py::arg("beta2"),
        py::arg("epsilon"), py::arg("do_bias_correction"));
  m.def("rmsprop", &RmsProp, py::arg("learning_rate"), py::arg("decay_rate"), py::arg("epsilon"), py::arg("centered"));
  m.def("lamb", &Lamb, py::arg("learning_rate"), py::arg("beta1"), py::arg("beta2"), py::arg("epsilon"),
        py::arg("weight_decay"));
  m.def("lars", &Lars, py::arg("learning_rate"), py::arg("momentum_beta"), py::arg("epsilon"),
        py::arg("lars_coefficient"));
  m.def("clip_by_global_norm", &ClipByGlobalNorm, py::arg("optimizer"), py::arg("clip_norm"));
  m.def("combined", &Combined, py::arg("parts"));
}

}  // namespace weir::python
