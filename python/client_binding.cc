#include "python/client_binding.h"

#include <pybind11/chrono.h>
#include <pybind11/stl.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "python/buffer.h"
#include "python/errors.h"
#include "serene/client.h"

namespace serene::python {
namespace py = pybind11;
namespace {

double Seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

// ClientOptions fields settable by keyword, with their Python types.
ClientOptions ApplyOptions(ClientOptions options, const py::kwargs& kwargs) {
  for (auto [key_handle, value] : kwargs) {
    const std::string key = py::str(key_handle);
    if (key == "switch") {
      options.switch_address = value.cast<std::string>();
    } else if (key == "job") {
      options.job = value.cast<uint16_t>();
    } else if (key == "key") {
      options.key = value.cast<uint32_t>();
    } else if (key == "rank") {
      options.rank = value.cast<uint32_t>();
    } else if (key == "world_size") {
      options.world_size = value.cast<uint32_t>();
    } else if (key == "bind") {
      options.bind_address = value.cast<std::string>();
    } else if (key == "window") {
      options.window = value.cast<uint32_t>();
    } else if (key == "timeout_ms") {
      options.initial_timeout = std::chrono::milliseconds(value.cast<int64_t>());
    } else if (key == "max_timeout_ms") {
      options.max_timeout = std::chrono::milliseconds(value.cast<int64_t>());
    } else if (key == "deadline_s") {
      options.deadline =
          std::chrono::milliseconds(static_cast<int64_t>(value.cast<double>() * 1000.0));
    } else if (key == "socket_buffer_bytes") {
      options.socket_buffer_bytes = value.cast<int>();
    } else if (key == "offload") {
      options.offload = value.cast<bool>();
    } else if (key == "fail_on_saturation") {
      options.fail_on_saturation = value.cast<bool>();
    } else if (key == "group") {
      options.group = value.cast<bool>();
    } else {
      throw py::type_error("Client: unknown option '" + key +
                           "'; known: switch, job, key, rank, world_size, bind, window, "
                           "timeout_ms, max_timeout_ms, deadline_s, socket_buffer_bytes, "
                           "offload, fail_on_saturation, group");
    }
  }
  return options;
}

// One C++ client plus what Python needs around it. The GIL is released for
// every call that waits; a mutex refuses a second thread on the same client
// (the C++ client is not thread-safe) instead of corrupting it.
class PyClient {
 public:
  explicit PyClient(const ClientOptions& options)
      : options_(options), client_(Take(Client::Connect(options))) {}

  JobInfo Join() {
    return Blocking("join", [&] { return client_->Join(); });
  }

  py::object Initialize(py::handle model) {
    ModelBuffer buffer = ModelBuffer::Acquire(model, Access::kWrite, Elements(), "initialize");
    if (buffer.type() != ElementType::kFloat32) {
      throw py::type_error("initialize: expected float32 elements (the model), got int32");
    }
    Blocking("initialize", [&] { return client_->Initialize(buffer.floats()); });
    return py::reinterpret_borrow<py::object>(model);
  }

  py::object Pull(py::handle out) {
    ModelBuffer buffer = ModelBuffer::Acquire(out, Access::kWrite, Elements(), "pull");
    Blocking("pull", [&] {
      return buffer.type() == ElementType::kFloat32 ? client_->Pull(buffer.floats())
                                                    : client_->PullFixed(buffer.ints());
    });
    return py::reinterpret_borrow<py::object>(out);
  }

  void Push(py::handle update) {
    ModelBuffer buffer = ModelBuffer::Acquire(update, Access::kRead, Elements(), "push");
    Blocking("push", [&] {
      return buffer.type() == ElementType::kFloat32 ? client_->Push(buffer.floats())
                                                    : client_->PushFixed(buffer.ints());
    });
  }

  ClockResult Clock() {
    return Blocking("clock", [&] { return client_->Clock(); });
  }

  ClockResult Exchange(py::handle update, py::handle out) {
    ModelBuffer in = ModelBuffer::Acquire(update, Access::kRead, Elements(), "exchange");
    ModelBuffer model = ModelBuffer::Acquire(out, Access::kWrite, Elements(), "exchange");
    if (in.type() != model.type()) {
      throw py::type_error(
          "exchange: update and out must both be float32 or both int32 (fixed point)");
    }
    return Blocking("exchange", [&] {
      return in.type() == ElementType::kFloat32 ? client_->Exchange(in.floats(), model.floats())
                                                : client_->ExchangeFixed(in.ints(), model.ints());
    });
  }

  void Leave(bool finish_job) {
    Blocking("leave", [&] { return client_->Leave(finish_job); });
  }

  // A property of the client, read under the same guard as the calls: a
  // property read while another thread is in a call would race with it.
  template <typename F>
  auto Read(const char* what, F&& read) const {
    Guard guard(*this, what);
    return read(static_cast<const Client&>(*client_));
  }
  bool joined() const {
    return Read("joined", [](const Client& c) { return c.info().workers != 0; });
  }
  const ClientOptions& options() const { return options_; }
  // "Client(...)"; says "busy" rather than wait or race while a call runs.
  std::string Repr() const;

 private:
  class Guard {
   public:
    Guard(const PyClient& owner, const char* call) : lock_(owner.mutex_, std::try_to_lock) {
      if (!lock_.owns_lock()) {
        ThrowStatus(Status::FailedPrecondition(
            std::string(call) +
            ": this Client is in use by another thread; a Client is one rank, use one per "
            "thread"));
      }
    }

   private:
    std::unique_lock<std::mutex> lock_;
  };

  size_t Elements() const { return static_cast<size_t>(client_->info().elements); }

  // Runs a waiting client call without the GIL, then raises its error, if any.
  template <typename F>
  auto Blocking(const char* call, F&& body)
      -> decltype(Take(std::declval<std::invoke_result_t<F&>>())) {
    Guard guard(*this, call);
    std::optional<std::invoke_result_t<F&>> result;
    {
      py::gil_scoped_release release;
      result.emplace(body());
    }
    return Take(std::move(*result));
  }

  ClientOptions options_;
  std::unique_ptr<Client> client_;
  mutable std::mutex mutex_;
};

std::string PyClient::Repr() const {
  std::string text = "Client(switch='" + options_.switch_address +
                     "', job=" + std::to_string(options_.job) +
                     ", rank=" + std::to_string(options_.rank);
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return text + ", busy)";
  return text + ", joined=" + (client_->info().workers != 0 ? "True" : "False") +
         ", clock=" + std::to_string(client_->clock()) + ")";
}

std::string Repr(const JobInfo& i) {
  return "JobInfo(workers=" + std::to_string(i.workers) +
         ", elements=" + std::to_string(i.elements) + ", rows=" + std::to_string(i.rows) +
         ", row_width=" + std::to_string(i.row_width) +
         ", scale_log2=" + std::to_string(i.scale_log2) + ", epoch=" + std::to_string(i.epoch) +
         ")";
}

std::string Repr(const ClockResult& r) {
  return "ClockResult(clock=" + std::to_string(r.clock) + ", epoch=" + std::to_string(r.epoch) +
         ", low=" + std::to_string(r.low) + ", high=" + std::to_string(r.high) +
         ", waited=" + std::to_string(Seconds(r.waited)) +
         ", finished=" + (r.finished ? "True" : "False") +
         ", rejoined=" + (r.rejoined ? "True" : "False") +
         ", switch_restarted=" + (r.switch_restarted ? "True" : "False") + ")";
}

void BindResults(py::module_& m) {
  py::class_<JobInfo>(m, "JobInfo", "The job as the switch described it at join().")
      .def_readonly("workers", &JobInfo::workers)
      .def_readonly("elements", &JobInfo::elements)
      .def_readonly("row_width", &JobInfo::row_width)
      .def_readonly("rows", &JobInfo::rows)
      .def_readonly("scale_log2", &JobInfo::scale_log2)
      .def_readonly("done", &JobInfo::done, "this rank's last completed clock (0xFFFFFFFF: none)")
      .def_readonly("waiting", &JobInfo::waiting)
      .def_readonly("low", &JobInfo::low)
      .def_readonly("high", &JobInfo::high)
      .def_readonly("epoch", &JobInfo::epoch)
      .def_readonly("incarnation", &JobInfo::incarnation)
      .def_readonly("group", &JobInfo::group)
      .def("__repr__", [](const JobInfo& i) { return Repr(i); });

  py::class_<ClockResult>(m, "ClockResult", "What the switch said when it released a clock().")
      .def_readonly("clock", &ClockResult::clock,
                    "the clock completed; the rank is now in clock + 1")
      .def_readonly("epoch", &ClockResult::epoch, "policy epoch that judged it")
      .def_readonly("low", &ClockResult::low, "slowest live rank's completed clock")
      .def_readonly("high", &ClockResult::high, "fastest rank's completed clock")
      .def_property_readonly(
          "waited", [](const ClockResult& r) { return Seconds(r.waited); },
          "seconds from the first CLOCK sent to its RELEASE")
      .def_readonly("finished", &ClockResult::finished, "the job was ended: stop training")
      .def_readonly("rejoined", &ClockResult::rejoined)
      .def_readonly("switch_restarted", &ClockResult::switch_restarted)
      .def("__repr__", [](const ClockResult& r) { return Repr(r); });

  py::class_<ClientStats>(m, "ClientStats", "Counters of one client; times in seconds.")
      .def_readonly("packets_sent", &ClientStats::packets_sent)
      .def_readonly("packets_received", &ClientStats::packets_received)
      .def_readonly("reads", &ClientStats::reads)
      .def_readonly("read_retransmits", &ClientStats::read_retransmits)
      .def_readonly("clock_retransmits", &ClientStats::clock_retransmits)
      .def_readonly("probes", &ClientStats::probes)
      .def_readonly("nacks", &ClientStats::nacks)
      .def_readonly("rows_resent", &ClientStats::rows_resent)
      .def_readonly("stale_replies", &ClientStats::stale_replies)
      .def_readonly("rejoins", &ClientStats::rejoins)
      .def_readonly("switch_restarts", &ClientStats::switch_restarts)
      .def_readonly("group_rows", &ClientStats::group_rows)
      .def_property_readonly("pull_time", [](const ClientStats& s) { return Seconds(s.pull_time); })
      .def_property_readonly("push_time", [](const ClientStats& s) { return Seconds(s.push_time); })
      .def_property_readonly("clock_wait",
                             [](const ClientStats& s) { return Seconds(s.clock_wait); });
}

}  // namespace

void BindClient(py::module_& m) {
  BindResults(m);
  py::class_<PyClient>(m, "Client", R"doc(One rank of one job on a Serene switch.

Client(**options) uses the given options over the C++ defaults;
Client.from_env(**options) reads RANK, WORLD_SIZE and SERENE_* first (as the
C++ client). Options: switch ("host:port"), job, key, rank, world_size, bind,
window, timeout_ms, max_timeout_ms, deadline_s, socket_buffer_bytes, offload,
fail_on_saturation, group. Connecting opens a UDP socket and sends nothing.

Per iteration: pull(model), compute an update, push(update), clock().
Buffers are numpy arrays or CPU torch tensors (float32, or int32 for the raw
fixed-point values) of the job's element count, used in place. Every blocking
call releases the GIL; every failure raises serene.Error with the C++ message.
)doc")
      .def(py::init([](const py::kwargs& kwargs) {
        return std::make_unique<PyClient>(ApplyOptions(ClientOptions(), kwargs));
      }))
      .def_static(
          "from_env",
          [](const py::kwargs& kwargs) {
            ClientOptions options = Take(ClientOptions::FromEnvironment());
            return std::make_unique<PyClient>(ApplyOptions(options, kwargs));
          },
          "Options from RANK, WORLD_SIZE, SERENE_SWITCH, SERENE_JOB, SERENE_KEY, ... then the "
          "keyword overrides.")
      .def("join", &PyClient::Join, "JOIN: binds this rank and returns the JobInfo.")
      .def("initialize", &PyClient::Initialize, py::arg("model"),
           "Rank 0 seeds the switch with `model`; every rank waits for all, then `model` holds "
           "the switch's model. Returns `model`.")
      .def("pull", &PyClient::Pull, py::arg("out"),
           "READ the model at the current clock into `out` (float32, or int32 fixed point). "
           "Returns `out`.")
      .def("push", &PyClient::Push, py::arg("update"),
           "INC `update` (float32, or int32 fixed point) into the model at the current clock.")
      .def("clock", &PyClient::Clock, "CLOCK: complete this clock, wait for the barrier.")
      .def("exchange", &PyClient::Exchange, py::arg("update"), py::arg("out"),
           "push(update), clock(), then pull(out) of the new clock (not if the job finished); "
           "returns the ClockResult. Both float32, or both int32; may be the same buffer.")
      .def("leave", &PyClient::Leave, py::arg("finish_job") = false,
           "LEAVE the barrier; finish_job=True ends the job for every rank.")
      .def_property_readonly("current_clock",
                             [](const PyClient& c) {
                               return c.Read("current_clock",
                                             [](const Client& k) { return k.clock(); });
                             })
      .def_property_readonly("info",
                             [](const PyClient& c) {
                               return c.Read("info", [](const Client& k) { return k.info(); });
                             })
      .def_property_readonly("finished",
                             [](const PyClient& c) {
                               return c.Read("finished",
                                             [](const Client& k) { return k.finished(); });
                             })
      .def_property_readonly("joined", &PyClient::joined)
      .def_property_readonly("stats",
                             [](const PyClient& c) {
                               return c.Read("stats", [](const Client& k) { return k.stats(); });
                             })
      .def_property_readonly("rank", [](const PyClient& c) { return c.options().rank; })
      .def_property_readonly("world_size",
                             [](const PyClient& c) {
                               const uint32_t workers = c.Read(
                                   "world_size", [](const Client& k) { return k.info().workers; });
                               return workers != 0 ? workers : c.options().world_size;
                             })
      .def_property_readonly("switch", [](const PyClient& c) { return c.options().switch_address; })
      .def_property_readonly("local_address",
                             [](const PyClient& c) {
                               return c.Read("local_address",
                                             [](const Client& k) { return k.local_address(); });
                             })
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__",
           [](PyClient& c, py::handle type, py::handle, py::handle) {
             // Leave on the way out; an error leaving never hides the one in flight.
             if (c.joined() && !c.Read("__exit__", [](const Client& k) { return k.finished(); })) {
               try {
                 c.Leave(false);
               } catch (py::error_already_set&) {
                 if (type.is_none()) throw;
               }
             }
             return false;
           })
      .def("__repr__", &PyClient::Repr);
}

}  // namespace serene::python
