// weir._C: sessions (calls release the GIL while the runtime works; callbacks and watch handlers
// take it back on the runtime's threads), checkpoints and the MNIST loader.
#include <atomic>
#include <chrono>
#include <map>
#include <memory>

#include <fmt/format.h>
#include <pybind11/stl.h>

#include "api/eager.hpp"
#include "api/python/bind.hpp"
#include "api/python/convert.hpp"
#include "weir/checkpoint.hpp"
#include "weir/data.hpp"
#include "weir/profile.hpp"
#include "weir/session.hpp"

namespace weir::python {

namespace {

/// Owns a Session so that it can be closed with the GIL released: closing completes the calls in
/// flight, whose callbacks need the GIL.
class PySession {
 public:
  explicit PySession(SessionOptions options) : session_(std::make_unique<Session>(options)) {}
  ~PySession() { Close(); }

  Session& Get() {
    if (!session_) throw std::runtime_error("[Session] the session is closed");
    return *session_;
  }

  void Close() {
    if (!session_) return;
    std::unique_ptr<Session> session = std::move(session_);
    if (Py_IsInitialized() != 0 && PyGILState_Check() != 0) {
      py::gil_scoped_release nogil;
      session.reset();
    } else {
      session.reset();
    }
  }

 private:
  std::unique_ptr<Session> session_;
};

// Ctrl-C during a long wait: Python runs its signal handlers only when the main thread comes back to
// the interpreter, which a thread blocked in Weir does not. The wait interrupter runs them there, with
// the GIL, on the main thread (where Python takes signals); an exception they raise (KeyboardInterrupt)
// ends the wait. `wait_interrupted` stays set until a sync call or Sync completes: at exit it tells the
// session not to wait for calls that an interrupted program left stuck (weir/_session.py).
std::atomic<bool> wait_interrupted{false};

void InstallWaitInterrupter(py::module_& m) {
  static const unsigned long main_thread = py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
  SetWaitInterrupter([] {
    if (PyThread_get_thread_ident() != main_thread || Py_IsInitialized() == 0 || _Py_IsFinalizing() != 0) return;
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) {
      wait_interrupted.store(true);
      throw py::error_already_set();
    }
  });
  m.def("wait_interrupted", [] { return wait_interrupted.load(); },
        "Whether the last long wait of Weir ended in a signal's exception (Ctrl-C) with no sync call or sync since.");
  m.attr("_inputs_of_interrupted_calls") = py::list();
}

std::vector<Tensor> InputTensors(const Job& job, const std::vector<py::array>& inputs, bool copy) {
  std::vector<Tensor> tensors;
  tensors.reserve(inputs.size());
  const auto& placeholders = job.Placeholders();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    // More inputs than placeholders is the session's error to report; name them generically here.
    const std::string_view what = i < placeholders.size() ? std::string_view(placeholders[i].name) : "input";
    tensors.push_back(copy ? CopyArray(inputs[i], what) : BorrowArray(inputs[i], what));
  }
  return tensors;
}

// One entry per output: its array, or a list of arrays (one per device) for a mirrored output.
py::list ToList(const Outputs& outputs) {
  py::list list;
  for (std::size_t i = 0; i < outputs.Size(); ++i) {
    const std::vector<Tensor> pieces = outputs.Pieces(i);
    if (pieces.size() == 1) {
      list.append(ToArray(pieces[0]));
      continue;
    }
    py::list per_device;
    for (const Tensor& piece : pieces) per_device.append(ToArray(piece));
    list.append(per_device);
  }
  return list;
}

py::dict ToDict(const std::map<std::string, Tensor>& tensors) {
  py::dict dict;
  for (const auto& [name, tensor] : tensors) dict[py::str(name)] = ToArray(tensor);
  return dict;
}

std::map<std::string, Tensor> FromDict(const std::map<std::string, py::array>& arrays) {
  std::map<std::string, Tensor> tensors;
  for (const auto& [name, array] : arrays) tensors.emplace(name, CopyArray(array, name));
  return tensors;
}

/// The Python exception a failed call hands to its callback: ValueError for bad arguments,
/// RuntimeError otherwise; a Python exception stays itself.
py::object ExceptionObject(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (py::error_already_set& e) {
    return e.value();
  } catch (const std::invalid_argument& e) {
    return py::reinterpret_borrow<py::object>(PyExc_ValueError)(e.what());
  } catch (const std::exception& e) {
    return py::reinterpret_borrow<py::object>(PyExc_RuntimeError)(e.what());
  } catch (...) {
    return py::reinterpret_borrow<py::object>(PyExc_RuntimeError)("unknown C++ exception");
  }
}

}  // namespace

void BindSession(py::module_& m) {
  InstallWaitInterrupter(m);
  py::class_<ActorProfile>(m, "ActorProfile", "One actor's firings and busy time while profiling was on.")
      .def_readonly("name", &ActorProfile::name)
      .def_readonly("kind", &ActorProfile::kind)
      .def_readonly("op_type", &ActorProfile::op_type)
      .def_readonly("device", &ActorProfile::device)
      .def_readonly("firings", &ActorProfile::firings)
      .def_readonly("busy_seconds", &ActorProfile::busy_seconds)
      .def_readonly("kept", &ActorProfile::kept,
                    "Firings that kept an earlier call's results (a weight's cast in a job that never changes it).")
      .def("__repr__", [](const ActorProfile& a) {
        return fmt::format("ActorProfile(name='{}', device='{}', kind='{}', op_type='{}', firings={}, busy_seconds={:.6f}, "
                           "kept={})",
                           a.name, a.device, a.kind, a.op_type, a.firings, a.busy_seconds, a.kept);
      });
  py::class_<JobProfile>(m, "JobProfile", "One job's calls (count, summed latency) and its actors.")
      .def_readonly("job", &JobProfile::job)
      .def_readonly("calls", &JobProfile::calls)
      .def_readonly("call_seconds", &JobProfile::call_seconds)
      .def_readonly("actors", &JobProfile::actors)
      .def("busy_seconds", &JobProfile::BusySeconds);
  py::class_<Profile>(m, "Profile", "What Session.stop_profiling gathered since start_profiling.")
      .def_readonly("wall_seconds", &Profile::wall_seconds)
      .def_readonly("jobs", &Profile::jobs)
      .def("format", &Profile::Format, py::arg("max_actors") = 25)
      .def("__str__", [](const Profile& p) { return p.Format(); });

  // Eager mode (python/weir/_function.py): the ops of a job being traced, run one at a time.
  py::class_<internal::EagerRun>(m, "EagerRun")
      .def(py::init([](PySession& session, const JobBuilder& builder) {
             return std::make_unique<internal::EagerRun>(session.Get(), builder.Graph());
           }),
           py::keep_alive<1, 2>(), py::arg("session"), py::arg("builder"))
      .def("set_value",
           [](internal::EagerRun& self, const Blob& blob, const py::array& value) {
             self.SetValue(blob, CopyArray(value, "an eager placeholder's value"));
           },
           py::arg("blob"), py::arg("value"))
      .def("value",
           [](internal::EagerRun& self, const Blob& blob) {
             Tensor value;
             {
               py::gil_scoped_release nogil;
               value = self.Value(blob);
             }
             return ToArray(value);
           },
           py::arg("blob"), "The blob's value, running the ops that make it where not yet run.")
      .def("run", &internal::EagerRun::Run, py::call_guard<py::gil_scoped_release>(), py::arg("blob"))
      .def("run_writers", &internal::EagerRun::RunWriters, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("ops_run", &internal::EagerRun::OpsRun);

  py::class_<PySession>(m, "Session")
      .def(py::init([](int scheduler_threads, int cpu_compute_streams, int max_calls_in_flight,
                       double shutdown_timeout_s, std::uint64_t seed, int cpu_devices, int gpu_devices,
                       double watchdog_timeout_s, int rank, int world_size, std::string master_addr,
                       int master_port, double rendezvous_timeout_s, double collective_timeout_s,
                       std::string collectives, bool stream_graphs, int local_rank, double fusion_threshold_mb,
                       std::string job_token, double copy_stream_mb, bool tensor_float_32, bool commit_before_writes) {
             SessionOptions options;
             options.cpu_devices = cpu_devices;
             options.gpu_devices = gpu_devices;
             options.scheduler_threads = scheduler_threads;
             options.cpu_compute_streams = cpu_compute_streams;
             options.max_calls_in_flight = max_calls_in_flight;
             options.shutdown_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(shutdown_timeout_s * 1000));
             options.seed = seed;
             options.watchdog_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(watchdog_timeout_s * 1000));
             options.distributed.rank = rank;
             options.distributed.world_size = world_size;
             options.distributed.local_rank = local_rank;
             options.distributed.master_addr = std::move(master_addr);
             options.distributed.master_port = master_port;
             options.distributed.job_token = std::move(job_token);
             options.distributed.rendezvous_timeout =
                 std::chrono::milliseconds(static_cast<std::int64_t>(rendezvous_timeout_s * 1000));
             options.distributed.collective_timeout =
                 std::chrono::milliseconds(static_cast<std::int64_t>(collective_timeout_s * 1000));
             options.distributed.collectives = std::move(collectives);
             if (!(fusion_threshold_mb >= 0) || fusion_threshold_mb > 1 << 20) {
               throw py::value_error(fmt::format("fusion_threshold_mb: expected a number of MiB in [0, 1048576], got {}",
                                                 fusion_threshold_mb));
             }
             options.distributed.fusion_threshold_bytes = static_cast<std::size_t>(fusion_threshold_mb * (1 << 20));
             options.stream_graphs = stream_graphs;
             if (!(copy_stream_mb >= 0) || copy_stream_mb > 1 << 20) {
               throw py::value_error(fmt::format("copy_stream_mb: expected a number of MiB in [0, 1048576], got {}",
                                                 copy_stream_mb));
             }
             options.copy_stream_bytes = static_cast<std::size_t>(copy_stream_mb * (1 << 20));
             options.tensor_float_32 = tensor_float_32;
             options.commit_before_writes = commit_before_writes;
             // Connecting waits for the other ranks: let other Python threads run meanwhile.
             py::gil_scoped_release release;
             return std::make_unique<PySession>(options);
           }),
           py::arg("scheduler_threads") = 0, py::arg("cpu_compute_streams") = 1, py::arg("max_calls_in_flight") = 128,
           py::arg("shutdown_timeout_s") = 30.0, py::arg("seed") = 0, py::arg("cpu_devices") = 1,
           py::arg("gpu_devices") = 0, py::arg("watchdog_timeout_s") = 300.0, py::arg("rank") = 0,
           py::arg("world_size") = 1, py::arg("master_addr") = "127.0.0.1", py::arg("master_port") = 29500,
           py::arg("rendezvous_timeout_s") = 300.0, py::arg("collective_timeout_s") = 180.0,
           py::arg("collectives") = "auto", py::arg("stream_graphs") = true, py::arg("local_rank") = 0,
           py::arg("fusion_threshold_mb") = 16.0, py::arg("job_token") = "", py::arg("copy_stream_mb") = static_cast<double>(SessionOptions{}.copy_stream_bytes) / (1 << 20),
           py::arg("tensor_float_32") = false, py::arg("commit_before_writes") = true)
      .def("resource",
           [](PySession& self) {
             const Resource r = self.Get().GetResource();
             py::dict d;
             d["machine_num"] = r.machines;
             d["cpu_device_num"] = r.cpu_devices;
             d["gpu_device_num"] = r.gpu_devices;
             d["threads_per_device"] = r.threads_per_device;
             d["scheduler_threads"] = r.scheduler_threads;
             d["process_num"] = r.processes;
             d["rank"] = r.rank;
             d["collectives"] = r.collectives;
             return d;
           })
      .def("close", &PySession::Close)
      .def("start_profiling", [](PySession& self) { self.Get().StartProfiling(); })
      .def("stop_profiling", [](PySession& self) { return self.Get().StopProfiling(); })
      // Both wait for the calls in flight, whose callbacks may need the GIL.
      .def("describe_state", [](PySession& self) { return self.Get().DescribeState(); },
           py::call_guard<py::gil_scoped_release>())
      .def("start_trace", [](PySession& self) { self.Get().StartTrace(); }, py::call_guard<py::gil_scoped_release>())
      .def("stop_trace", [](PySession& self, const std::string& path) { self.Get().StopTrace(path); },
           py::arg("path"), py::call_guard<py::gil_scoped_release>())
      // Sync: the arrays are borrowed, which is safe because the caller holds them until we return.
      .def("call",
           [](PySession& self, const Job& job, const std::vector<py::array>& inputs) {
             std::vector<Tensor> tensors = InputTensors(job, inputs, /*copy=*/false);
             Outputs outputs;
             try {
               py::gil_scoped_release nogil;
               outputs = self.Get().Call(job, std::move(tensors));
             } catch (const py::error_already_set&) {
               // Interrupted: the call goes on reading the borrowed arrays, which must outlive it.
               py::module_::import("weir._C").attr("_inputs_of_interrupted_calls").attr("append")(py::cast(inputs));
               throw;
             }
             wait_interrupted.store(false, std::memory_order_relaxed);
             return ToList(outputs);
           },
           py::arg("job"), py::arg("inputs"))
      // Async: the inputs are copied, so the caller may reuse its arrays at once. The callback gets
      // (list of arrays, None) or (None, exception).
      .def("call_async",
           [](PySession& self, const Job& job, const std::vector<py::array>& inputs, py::object callback) {
             std::vector<Tensor> tensors = InputTensors(job, inputs, /*copy=*/true);
             Session::Callback done = [callable = PyCallable(std::move(callback))](CallResult result) {
               py::gil_scoped_acquire gil;
               if (result.Ok()) {
                 callable.Object()(ToList(result.outputs), py::none());
               } else {
                 callable.Object()(py::none(), ExceptionObject(result.error));
               }
             };
             py::gil_scoped_release nogil;
             self.Get().CallAsync(job, std::move(tensors), std::move(done));
           },
           py::arg("job"), py::arg("inputs"), py::arg("callback"))
      .def("sync",
           [](PySession& self) {
             self.Get().Sync();
             wait_interrupted.store(false, std::memory_order_relaxed);
           },
           py::call_guard<py::gil_scoped_release>())
      .def("compile", [](PySession& self, const Job& job) { self.Get().Compile(job); },
           py::call_guard<py::gil_scoped_release>(), py::arg("job"))
      .def("release", [](PySession& self, const Job& job) { self.Get().Release(job); },
           py::call_guard<py::gil_scoped_release>(), py::arg("job"))
      .def("plan_dot", [](PySession& self, const Job& job) { return self.Get().PlanDot(job); },
           py::call_guard<py::gil_scoped_release>(), py::arg("job"))
      .def("get_variable",
           [](PySession& self, const std::string& name) {
             Tensor value;
             {
               py::gil_scoped_release nogil;
               value = self.Get().GetVariable(name);
             }
             return ToArray(value);
           },
           py::arg("name"))
      .def("get_variables",
           [](PySession& self) {
             std::map<std::string, Tensor> values;
             {
               py::gil_scoped_release nogil;
               values = self.Get().GetVariables();
             }
             return ToDict(values);
           })
      .def("set_variables",
           [](PySession& self, const std::map<std::string, py::array>& values, bool ignore_unknown) {
             std::map<std::string, Tensor> tensors = FromDict(values);
             py::gil_scoped_release nogil;
             self.Get().SetVariables(tensors, ignore_unknown);
           },
           py::arg("values"), py::arg("ignore_unknown") = true)
      .def("save_checkpoint",
           [](PySession& self, const std::string& path, bool overwrite, const std::vector<std::string>& names) {
             py::gil_scoped_release nogil;
             self.Get().SaveCheckpoint(path, SaveOptions{.overwrite = overwrite}, names);
           },
           py::arg("path"), py::arg("overwrite") = false, py::arg("names") = std::vector<std::string>())
      .def("load_checkpoint",
           [](PySession& self, const std::string& path, const std::vector<std::string>& names) {
             LoadReport report;
             {
               py::gil_scoped_release nogil;
               report = self.Get().LoadCheckpoint(path, names);
             }
             return py::make_tuple(report.missing, report.unexpected);
           },
           py::arg("path"), py::arg("names") = std::vector<std::string>());

  m.def("visible_gpus", &VisibleGpus);
  m.def("supported_ops",
        [](std::string_view device) {
          py::dict ops;
          for (const auto& [op, dtypes] : SupportedOps(device)) {
            py::list names;
            for (DType dtype : dtypes) names.append(std::string(Name(dtype)));
            ops[py::str(op)] = names;
          }
          return ops;
        },
        py::arg("device"));

  m.def("save_checkpoint",
        [](const std::string& path, const std::map<std::string, py::array>& values, bool overwrite) {
          std::map<std::string, Tensor> tensors = FromDict(values);
          py::gil_scoped_release nogil;
          SaveCheckpoint(path, tensors, SaveOptions{.overwrite = overwrite});
        },
        py::arg("path"), py::arg("values"), py::arg("overwrite") = false);
  m.def("load_checkpoint",
        [](const std::string& path) {
          std::map<std::string, Tensor> values;
          {
            py::gil_scoped_release nogil;
            values = LoadCheckpoint(path);
          }
          return ToDict(values);
        },
        py::arg("path"));

  m.def("load_mnist",
        [](int batch_size, const std::string& data_dir) {
          Mnist mnist;
          {
            py::gil_scoped_release nogil;
            mnist = LoadMnist(batch_size, data_dir);
          }
          return py::make_tuple(py::make_tuple(ToArray(mnist.train.images), ToArray(mnist.train.labels)),
                                py::make_tuple(ToArray(mnist.test.images), ToArray(mnist.test.labels)));
        },
        py::arg("batch_size"), py::arg("data_dir") = "");
}

}  // namespace weir::python
