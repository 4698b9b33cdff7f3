#include "train/metrics.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace serene::train {
namespace {

nlohmann::json Num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

std::string Cell(double v) {
  if (!std::isfinite(v)) return "";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

Status WriteFile(const std::string& path, const std::string& text) {
  std::error_code ec;
  const std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  std::ofstream out(path, std::ios::trunc);
  if (!out) return Status::IoError("cannot open metrics file " + path + " for writing");
  out << text;
  out.close();
  if (!out) return Status::IoError("cannot write metrics file " + path);
  return Status::Ok();
}

}  // namespace

std::string_view StopReasonName(StopReason reason) {
  switch (reason) {
    case StopReason::kStepLimit:
      return "step_limit";
    case StopReason::kTimeLimit:
      return "time_limit";
    case StopReason::kTargetReached:
      return "target_reached";
    case StopReason::kFinishedByPeer:
      return "finished_by_peer";
  }
  return "unknown";
}

std::string MetricsToJson(const RunMetrics& m) {
  nlohmann::json j;
  j["backend"] = m.backend;
  j["rank"] = m.rank;
  j["world_size"] = m.world_size;
  j["model"] = m.model;
  j["parameters"] = m.parameters;
  j["seed"] = m.seed;
  j["learning_rate"] = m.learning_rate;
  j["batch_size"] = m.batch_size;
  j["straggler"] = m.straggler;
  j["target_accuracy"] = Num(m.target_accuracy);
  j["max_steps"] = m.max_steps;
  j["time_limit_s"] = m.time_limit_s;
  j["eval_every"] = m.eval_every;
  j["evaluates"] = m.evaluates;
  j["eval_samples"] = m.eval_samples;
  j["stop_reason"] = std::string(StopReasonName(m.stop_reason));
  j["iterations"] = m.iterations;
  j["epochs"] = m.epochs;
  j["init_s"] = m.init_s;
  j["job_completion_s"] = m.job_completion_s;
  j["target_reached_s"] = Num(m.target_reached_s);
  j["compute_s"] = m.compute_s;
  j["pull_s"] = m.pull_s;
  j["push_s"] = m.push_s;
  j["wait_s"] = m.wait_s;
  j["barrier_wait_s"] = m.barrier_wait_s;
  j["straggler_sleep_s"] = m.straggler_sleep_s;
  j["slowed_iterations"] = m.slowed_iterations;
  j["eval_s"] = m.eval_s;
  j["final_accuracy"] = Num(m.final_accuracy);
  j["final_test_loss"] = Num(m.final_test_loss);
  j["retransmissions"] = m.retransmissions;
  nlohmann::json timeline = nlohmann::json::array();
  for (const TimelinePoint& p : m.timeline) {
    timeline.push_back({{"step", p.step},
                        {"time_s", p.time_s},
                        {"train_loss", Num(p.train_loss)},
                        {"accuracy", Num(p.accuracy)},
                        {"test_loss", Num(p.test_loss)}});
  }
  j["timeline"] = std::move(timeline);
  return j.dump(2) + "\n";
}

Status WriteModelFile(std::span<const float> model, const std::string& path) {
  std::error_code ec;
  const std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  std::ofstream out(path, std::ios::trunc | std::ios::binary);
  if (!out) return Status::IoError("cannot open model file " + path + " for writing");
  out.write(reinterpret_cast<const char*>(model.data()),
            static_cast<std::streamsize>(model.size_bytes()));
  out.close();
  if (!out) return Status::IoError("cannot write model file " + path);
  return Status::Ok();
}

Status WriteMetricsJson(const RunMetrics& m, const std::string& path) {
  return WriteFile(path, MetricsToJson(m));
}

Status WriteTimelineCsv(const RunMetrics& m, const std::string& path) {
  std::string text = "step,time_s,train_loss,accuracy,test_loss\n";
  for (const TimelinePoint& p : m.timeline) {
    text += std::to_string(p.step) + "," + Cell(p.time_s) + "," + Cell(p.train_loss) + "," +
            Cell(p.accuracy) + "," + Cell(p.test_loss) + "\n";
  }
  return WriteFile(path, text);
}

Status WriteIterationsCsv(const RunMetrics& m, const std::string& path) {
  std::string text = "step,start_s,pull_s,compute_s,sleep_s,push_s,loss\n";
  for (const IterationRecord& r : m.iteration_log) {
    text += std::to_string(r.step) + "," + Cell(r.start_s) + "," + Cell(r.pull_s) + "," +
            Cell(r.compute_s) + "," + Cell(r.sleep_s) + "," + Cell(r.push_s) + "," + Cell(r.loss) +
            "\n";
  }
  return WriteFile(path, text);
}

std::string ExpandRankPattern(std::string pattern, int rank) {
  const std::string key = "{rank}";
  const std::string value = std::to_string(rank);
  for (size_t pos = pattern.find(key); pos != std::string::npos;
       pos = pattern.find(key, pos + value.size())) {
    pattern.replace(pos, key.size(), value);
  }
  return pattern;
}

Status WriteMetrics(const RunMetrics& m, const MetricsPaths& paths) {
  Status s;
  if (s.ok() && !paths.json.empty()) {
    s = WriteMetricsJson(m, ExpandRankPattern(paths.json, m.rank));
  }
  if (s.ok() && !paths.timeline_csv.empty()) {
    s = WriteTimelineCsv(m, ExpandRankPattern(paths.timeline_csv, m.rank));
  }
  if (s.ok() && !paths.iterations_csv.empty()) {
    s = WriteIterationsCsv(m, ExpandRankPattern(paths.iterations_csv, m.rank));
  }
  return s;
}

}  // namespace serene::train
