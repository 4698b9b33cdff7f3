#include "experiment/metrics_reader.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace serene::experiment {
namespace {

using nlohmann::json;

// Reads fields of one JSON object; remembers the first error.
class Fields {
 public:
  Fields(const json& object, std::string source) : j_(object), source_(std::move(source)) {}

  // A number; null is NaN. Missing: an error if `required`, else unchanged.
  void Real(const char* key, double* out, bool required = false) {
    const json* v = Find(key, required);
    if (v == nullptr) return;
    if (v->is_null()) {
      *out = train::kNaN;
    } else if (v->is_number()) {
      *out = v->get<double>();
    } else {
      Fail(key, "a number or null");
    }
  }

  template <typename T>
  void Int(const char* key, T* out, bool required = false) {
    const json* v = Find(key, required);
    if (v == nullptr) return;
    if (v->is_number_integer()) {
      *out = v->get<T>();
    } else {
      Fail(key, "an integer");
    }
  }

  void Text(const char* key, std::string* out, bool required = false) {
    const json* v = Find(key, required);
    if (v == nullptr) return;
    if (v->is_string()) {
      *out = v->get<std::string>();
    } else {
      Fail(key, "a string");
    }
  }

  void Bool(const char* key, bool* out) {
    const json* v = Find(key, false);
    if (v == nullptr) return;
    if (v->is_boolean()) {
      *out = v->get<bool>();
    } else {
      Fail(key, "a boolean");
    }
  }

  void Fail(const std::string& key, const std::string& expected) {
    if (status_.ok()) {
      status_ = Status::InvalidArgument(source_ + ": field '" + key + "' is not " + expected);
    }
  }

  const Status& status() const { return status_; }

 private:
  const json* Find(const char* key, bool required) {
    auto it = j_.find(key);
    if (it == j_.end()) {
      if (required && status_.ok()) {
        status_ = Status::InvalidArgument(source_ + ": missing field '" + key + "'");
      }
      return nullptr;
    }
    return &*it;
  }

  const json& j_;
  std::string source_;
  Status status_;
};

}  // namespace

Result<train::StopReason> ParseStopReason(std::string_view name) {
  for (auto r : {train::StopReason::kStepLimit, train::StopReason::kTimeLimit,
                 train::StopReason::kTargetReached, train::StopReason::kFinishedByPeer}) {
    if (train::StopReasonName(r) == name) return r;
  }
  return Status::InvalidArgument("unknown stop reason '" + std::string(name) + "'");
}

Result<train::RunMetrics> ParseMetricsJson(std::string_view text, const std::string& source) {
  const json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::InvalidArgument(source + ": not valid JSON");
  if (!j.is_object()) return Status::InvalidArgument(source + ": not a JSON object");
  train::RunMetrics m;
  Fields f(j, source);
  f.Text("backend", &m.backend, true);
  f.Int("rank", &m.rank, true);
  f.Int("world_size", &m.world_size, true);
  f.Text("model", &m.model);
  f.Int("parameters", &m.parameters);
  f.Int("seed", &m.seed);
  f.Real("learning_rate", &m.learning_rate);
  f.Int("batch_size", &m.batch_size);
  f.Text("straggler", &m.straggler);
  f.Real("target_accuracy", &m.target_accuracy);
  f.Int("max_steps", &m.max_steps);
  f.Real("time_limit_s", &m.time_limit_s);
  f.Int("eval_every", &m.eval_every);
  f.Bool("evaluates", &m.evaluates);
  f.Int("eval_samples", &m.eval_samples);
  std::string stop;
  f.Text("stop_reason", &stop, true);
  f.Int("iterations", &m.iterations, true);
  f.Int("epochs", &m.epochs);
  f.Real("init_s", &m.init_s);
  f.Real("job_completion_s", &m.job_completion_s, true);
  f.Real("target_reached_s", &m.target_reached_s);
  f.Real("compute_s", &m.compute_s);
  f.Real("pull_s", &m.pull_s);
  f.Real("push_s", &m.push_s);
  f.Real("wait_s", &m.wait_s, true);
  f.Real("barrier_wait_s", &m.barrier_wait_s);
  f.Real("straggler_sleep_s", &m.straggler_sleep_s);
  f.Int("slowed_iterations", &m.slowed_iterations);
  f.Real("eval_s", &m.eval_s);
  f.Real("final_accuracy", &m.final_accuracy);
  f.Real("final_test_loss", &m.final_test_loss);
  f.Int("retransmissions", &m.retransmissions);
  if (!f.status().ok()) return f.status();
  auto reason = ParseStopReason(stop);
  if (!reason.ok()) return Status::InvalidArgument(source + ": " + reason.status().message());
  m.stop_reason = *reason;

  if (auto t = j.find("timeline"); t != j.end()) {
    if (!t->is_array())
      return Status::InvalidArgument(source + ": field 'timeline' is not an array");
    for (size_t i = 0; i < t->size(); ++i) {
      const json& point = (*t)[i];
      const std::string where = source + ": timeline[" + std::to_string(i) + "]";
      if (!point.is_object()) return Status::InvalidArgument(where + " is not an object");
      train::TimelinePoint p;
      Fields pf(point, where);
      pf.Int("step", &p.step, true);
      pf.Real("time_s", &p.time_s, true);
      pf.Real("train_loss", &p.train_loss);
      pf.Real("accuracy", &p.accuracy);
      pf.Real("test_loss", &p.test_loss);
      if (!pf.status().ok()) return pf.status();
      m.timeline.push_back(p);
    }
  }
  return m;
}

Result<train::RunMetrics> ReadMetricsFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  return ParseMetricsJson(text.str(), path);
}

}  // namespace serene::experiment
