#include "sim/seed_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "experiment/plot.h"

namespace serene::sim {
namespace {

// max over ranks of (job completion − barrier wait): the JCT had no rank
// waited for another.
double NoWaitJct(const experiment::RunSummary& r) {
  double out = std::nan("");
  for (const train::RunMetrics& m : r.ranks) {
    const double t = m.job_completion_s - m.barrier_wait_s;
    if (!(out >= t)) out = t;
  }
  return out;
}

// Time the switch held the ranks at the barrier (barrier_hold.h): the sum,
// the mean and the largest over ranks.
struct Held {
  double sum = std::nan(""), mean = std::nan(""), max = std::nan("");
};

Held HeldOf(const experiment::RunSummary& r) {
  Held h;
  if (r.ranks.empty()) return h;
  h.sum = h.max = 0;
  for (const train::RunMetrics& m : r.ranks) {
    h.sum += m.barrier_wait_s;
    h.max = std::max(h.max, m.barrier_wait_s);
  }
  h.mean = h.sum / static_cast<double>(r.ranks.size());
  return h;
}

nlohmann::json SpreadJson(const Spread& s) {
  if (s.n == 0) return nullptr;
  return {{"n", s.n}, {"mean", s.mean}, {"sd", s.sd}, {"min", s.min}, {"max", s.max}};
}

struct Column {
  const char* name;
  const char* key;  // summary.csv's and summary.json's
  Spread SeedRow::*field;
  int decimals;
};

constexpr Column kColumns[] = {
    {"JCT (s)", "jct_s", &SeedRow::jct_s, 2},
    {"JCT % of baseline", "jct_pct", &SeedRow::jct_pct, 1},
    {"waiting, sum (s)", "wait_s", &SeedRow::wait_s, 2},
    {"waiting % of baseline", "wait_pct", &SeedRow::wait_pct, 1},
    {"barrier wait, mean per rank (s)", "barrier_mean_s", &SeedRow::barrier_mean_s, 3},
    {"barrier wait, max rank (s)", "barrier_max_s", &SeedRow::barrier_max_s, 3},
    {"barrier wait % of baseline", "barrier_pct", &SeedRow::barrier_pct, 1},
    {"iterations (rank 0)", "iterations", &SeedRow::iterations, 0},
    {"final accuracy", "accuracy", &SeedRow::accuracy, 4},
    {"no-wait JCT (s)", "no_wait_s", &SeedRow::no_wait_s, 2},
    {"no-wait JCT % of baseline JCT", "no_wait_pct", &SeedRow::no_wait_pct, 1},
};

}  // namespace

Spread SpreadOf(const std::vector<double>& values) {
  Spread s;
  double sum = 0;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    if (s.n == 0) s.min = s.max = v;
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
    sum += v;
    ++s.n;
  }
  if (s.n == 0) return s;
  s.mean = sum / s.n;
  double sq = 0;
  for (double v : values) {
    if (std::isfinite(v)) sq += (v - s.mean) * (v - s.mean);
  }
  s.sd = s.n > 1 ? std::sqrt(sq / (s.n - 1)) : 0;
  return s;
}

std::vector<SeedRow> SummarizeSeeds(
    const std::vector<std::vector<experiment::RunSummary>>& by_seed) {
  std::vector<SeedRow> rows;
  if (by_seed.empty()) return rows;
  for (size_t run = 0; run < by_seed[0].size(); ++run) {
    SeedRow row;
    row.label = by_seed[0][run].spec.label;
    row.policy = by_seed[0][run].spec.policy;
    std::vector<double> jct, jct_pct, wait, wait_pct, iters, acc, no_wait, no_wait_pct;
    std::vector<double> held_mean, held_max, held_pct;
    for (const auto& seed : by_seed) {
      if (run >= seed.size()) continue;
      const experiment::RunSummary& r = seed[run];
      ++row.seeds;
      if (!r.status.ok()) {
        ++row.failed;
        continue;
      }
      if (std::isfinite(r.target_reached_s)) ++row.reached_target;
      jct.push_back(r.jct_s);
      jct_pct.push_back(r.jct_pct_of_baseline);
      wait.push_back(r.wait_total_s);
      wait_pct.push_back(r.wait_pct_of_baseline);
      iters.push_back(static_cast<double>(r.iterations_rank0));
      acc.push_back(r.final_accuracy);
      no_wait.push_back(NoWaitJct(r));
      const double base = seed[0].status.ok() ? seed[0].jct_s : std::nan("");
      no_wait_pct.push_back(100 * NoWaitJct(r) / base);
      const Held held = HeldOf(r);
      held_mean.push_back(held.mean);
      held_max.push_back(held.max);
      // 0 of 0 (a baseline that never waits, e.g. ASYNC) is 0 %, not NaN.
      const double base_held = seed[0].status.ok() ? HeldOf(seed[0]).sum : std::nan("");
      held_pct.push_back(base_held > 0 ? 100 * held.sum / base_held
                                       : (held.sum == 0 && base_held == 0 ? 0 : std::nan("")));
    }
    row.jct_s = SpreadOf(jct);
    row.jct_pct = SpreadOf(jct_pct);
    row.wait_s = SpreadOf(wait);
    row.wait_pct = SpreadOf(wait_pct);
    row.iterations = SpreadOf(iters);
    row.accuracy = SpreadOf(acc);
    row.no_wait_s = SpreadOf(no_wait);
    row.no_wait_pct = SpreadOf(no_wait_pct);
    row.barrier_mean_s = SpreadOf(held_mean);
    row.barrier_max_s = SpreadOf(held_max);
    row.barrier_pct = SpreadOf(held_pct);
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string FormatSpread(const Spread& s, int decimals) {
  if (s.n == 0) return "-";
  if (s.n == 1) return fmt::format("{:.{}f}", s.mean, decimals);
  return fmt::format("{:.{}f} ± {:.{}f}", s.mean, decimals, s.sd, decimals);
}

std::string SeedTable(const std::vector<SeedRow>& rows) {
  size_t width = 0;
  std::vector<std::vector<std::string>> cells;
  for (const SeedRow& r : rows) {
    std::vector<std::string> c = {r.label};
    for (const Column& col : kColumns) c.push_back(FormatSpread(r.*col.field, col.decimals));
    c.push_back(fmt::format("{}/{}", r.reached_target, r.seeds - r.failed));
    c.push_back(std::to_string(r.failed));
    for (const auto& s : c) width = std::max(width, s.size());
    cells.push_back(std::move(c));
  }
  std::vector<std::string> names = {"run"};
  for (const Column& col : kColumns) names.push_back(col.name);
  names.push_back("seeds reaching the target");
  names.push_back("failed seeds");
  size_t name_width = 0;
  for (const auto& n : names) name_width = std::max(name_width, n.size());
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    out += fmt::format("{:<{}}", names[i], name_width + 2);
    for (const auto& c : cells) out += fmt::format("{:>{}}", c[i], width + 2);
    out += "\n";
  }
  return out;
}

std::string SeedMarkdown(const std::string& title, const std::vector<SeedRow>& rows) {
  std::string out = "# " + title + "\n\nMean ± standard deviation over seeds.\n\n| run |";
  for (const Column& col : kColumns) out += std::string(" ") + col.name + " |";
  out += " seeds reaching the target |\n|---|";
  for (size_t i = 0; i < std::size(kColumns); ++i) out += "---|";
  out += "---|\n";
  for (const SeedRow& r : rows) {
    out += "| " + r.label + " |";
    for (const Column& col : kColumns) out += " " + FormatSpread(r.*col.field, col.decimals) + " |";
    out += fmt::format(" {}/{}{} |\n", r.reached_target, r.seeds - r.failed,
                       r.failed > 0 ? fmt::format(" ({} failed)", r.failed) : "");
  }
  return out;
}

std::string SeedJson(const std::vector<SeedRow>& rows) {
  nlohmann::json runs = nlohmann::json::array();
  for (const SeedRow& r : rows) {
    nlohmann::json j = {{"label", r.label},
                        {"policy", r.policy},
                        {"seeds", r.seeds},
                        {"failed", r.failed},
                        {"reached_target", r.reached_target},
                        {"jct_s", SpreadJson(r.jct_s)},
                        {"jct_pct_of_baseline", SpreadJson(r.jct_pct)},
                        {"wait_total_s", SpreadJson(r.wait_s)},
                        {"wait_pct_of_baseline", SpreadJson(r.wait_pct)},
                        {"iterations_rank0", SpreadJson(r.iterations)},
                        {"final_accuracy", SpreadJson(r.accuracy)},
                        {"no_wait_jct_s", SpreadJson(r.no_wait_s)},
                        {"no_wait_jct_pct_of_baseline", SpreadJson(r.no_wait_pct)}};
    j["barrier_wait_mean_s"] = SpreadJson(r.barrier_mean_s);
    j["barrier_wait_max_s"] = SpreadJson(r.barrier_max_s);
    j["barrier_wait_pct_of_baseline"] = SpreadJson(r.barrier_pct);
    runs.push_back(std::move(j));
  }
  return nlohmann::json{{"runs", runs}}.dump(2) + "\n";
}

std::string SeedCsv(const std::vector<SeedRow>& rows) {
  std::string out = "label,seeds,failed,reached_target";
  for (const Column& col : kColumns) {
    out += fmt::format(",{0}_mean,{0}_sd,{0}_min,{0}_max", col.key);
  }
  out += "\n";
  for (const SeedRow& r : rows) {
    out += fmt::format("\"{}\",{},{},{}", r.label, r.seeds, r.failed, r.reached_target);
    for (const Column& col : kColumns) {
      const Spread& s = r.*col.field;
      if (s.n == 0) {
        out += ",,,,";
      } else {
        out += fmt::format(",{},{},{},{}", s.mean, s.sd, s.min, s.max);
      }
    }
    out += "\n";
  }
  return out;
}

Result<std::string> WriteSeedSummary(const std::string& dir, const std::string& title,
                                     const std::vector<SeedRow>& rows) {
  if (auto s = experiment::WriteTextFile(dir + "/summary.md", SeedMarkdown(title, rows)); !s.ok()) {
    return s;
  }
  if (auto s = experiment::WriteTextFile(dir + "/summary.json", SeedJson(rows)); !s.ok()) return s;
  if (auto s = experiment::WriteTextFile(dir + "/summary.csv", SeedCsv(rows)); !s.ok()) return s;
  std::string data =
      "# label jct_pct_mean jct_pct_sd wait_pct_mean wait_pct_sd barrier_pct_mean "
      "barrier_pct_sd\n";
  for (const SeedRow& r : rows) {
    if (r.jct_pct.n == 0) continue;
    data += fmt::format("\"{}\" {} {} {} {} {} {}\n", r.label, r.jct_pct.mean, r.jct_pct.sd,
                        r.wait_pct.mean, r.wait_pct.sd, r.barrier_pct.n ? r.barrier_pct.mean : 0,
                        r.barrier_pct.n ? r.barrier_pct.sd : 0);
  }
  if (auto s = experiment::WriteTextFile(dir + "/plot/summary.dat", data); !s.ok()) return s;
  const std::string script = fmt::format(
      "set terminal pngcairo size 1000,560 font ',11'\n"
      "set output 'summary.png'\n"
      "set title \"{}\"\n"
      "set ylabel '% of the baseline (mean ± sd over seeds)'\n"
      "set style data histogram\n"
      "set style histogram errorbars gap 2 lw 1.5\n"
      "set style fill solid 0.6 border -1\n"
      "set yrange [0:*]\n"
      "set grid ytics\n"
      "set key top right\n"
      "set xtics rotate by -30\n"
      "plot 'plot/summary.dat' using 2:3:xtic(1) title 'job completion time', \\\n"
      "     '' using 4:5 title 'waiting time (pull + push)', \\\n"
      "     '' using 6:7 title 'barrier wait (held for others)'\n",
      title);
  if (auto s = experiment::WriteTextFile(dir + "/plot/summary.gp", script); !s.ok()) return s;
  if (auto s = experiment::RunGnuplot(dir, "plot/summary.gp"); !s.ok()) return s;
  return dir + "/summary.png";
}

}  // namespace serene::sim
