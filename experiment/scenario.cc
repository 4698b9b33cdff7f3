#include "experiment/scenario.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include "common/parse.h"
#include "common/toml_util.h"
#include "control/policy_script.h"
#include "dataplane/barrier_params.h"
#include "dataplane/consts.h"
#include "loadgen/switch_launch.h"
#include "net/fault_injector.h"
#include "train/gloo_backend.h"
#include "train/straggler.h"

// The source tree (its policies/ folder), for policy scripts named relative
// to it; set by experiment/CMakeLists.txt.
#ifndef SERENE_SOURCE_DIR
#define SERENE_SOURCE_DIR ""
#endif

namespace serene::experiment {
namespace {

constexpr int kMaxRanks = static_cast<int>(dataplane::kMaxWorkers);  // ranks per switch job
constexpr int64_t kTrainExamples = 60000;
constexpr int64_t kTestExamples = 10000;
constexpr uint32_t kMaxRow = 16368;      // the switch's limit (one datagram)
constexpr int kMinControlPeriodMs = 10;  // the controller's limits
constexpr int kMaxControlPeriodMs = 60000;
constexpr std::string_view kScriptSuffix = ".lua";

Status Bad(const std::string& where, std::string_view value, std::string_view expected) {
  return Status::InvalidArgument(fmt::format("{} '{}': expected {}", where, value, expected));
}

bool ParseInt(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

bool ParseReal(std::string_view s, double* out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size() && std::isfinite(*out);
}

// An integer field within [lo, hi].
template <typename T>
Status SetInt(const std::string& where, std::string_view v, int64_t lo, int64_t hi, T* out) {
  int64_t x = 0;
  if (!ParseInt(v, &x) || x < lo || x > hi) {
    return Bad(where, v, fmt::format("an integer {}..{}", lo, hi));
  }
  *out = static_cast<T>(x);
  return Status::Ok();
}

// A policy the switch's --job flag takes, or an error naming the forms.
Status CheckPolicy(const std::string& where, std::string_view policy) {
  constexpr std::string_view kForms = "sync, ssp:W, async or quorum:K:L";
  if (policy.find_first_of("=,") != std::string_view::npos) {
    return Bad(where, policy, std::string(kForms) + " (the named forms only)");
  }
  auto p = dataplane::BarrierParams::Parse(policy);
  if (p.ok()) return Status::Ok();
  // The parser says "bad policy 'TEXT': REASON (expected ...)": keep REASON.
  std::string reason = p.status().message();
  const size_t from = reason.find("': ");
  const size_t to = reason.rfind(" (expected");
  reason = from != std::string::npos && to != std::string::npos && to > from
               ? reason.substr(from + 3, to - from - 3)
               : "unknown policy";
  return Bad(where, policy, std::string(kForms) + "; " + reason);
}

// The policy of a --runs item or a [[run]] table: a named rule the switch's
// --job flag takes, or the path of a policy script (loaded later, by
// ValidateScenario).
Status CheckRunPolicy(const std::string& where, std::string_view policy) {
  if (IsPolicyScript(policy)) return Status::Ok();
  return CheckPolicy(where, policy);
}

Result<BackendKind> ParseBackend(const std::string& where, std::string_view text) {
  if (text == "serene") return BackendKind::kSerene;
  if (text == "gloo") return BackendKind::kGloo;
  return Bad(where, text, "serene or gloo");
}

// Appends " #2", " #3", ... to labels used by an earlier run.
void Deduplicate(std::vector<RunSpec>* runs) {
  for (auto it = runs->begin(); it != runs->end(); ++it) {
    auto taken = [&](const std::string& label) {
      return std::any_of(runs->begin(), it, [&](const RunSpec& r) { return r.label == label; });
    };
    const std::string base = it->label;
    for (int n = 2; taken(it->label); ++n) it->label = base + " #" + std::to_string(n);
  }
}

// A scalar TOML value as text: strings as written, numbers in a form the
// setters parse back exactly.
std::optional<std::string> ScalarText(const toml::node& node) {
  if (auto s = node.as_string()) return s->get();
  if (auto i = node.as_integer()) return std::to_string(i->get());
  if (auto f = node.as_floating_point()) return fmt::format("{}", f->get());
  return std::nullopt;
}

// Why a run that is not a policy script's cannot take params.
std::string ParamsMisplaced(const RunSpec& run) {
  return "params apply to a policy script (a policy ending in .lua) only, not to " +
         (run.backend == BackendKind::kGloo ? std::string("a gloo run")
                                            : "policy '" + run.policy + "'");
}

// A [[run]]'s params table: names to numbers or strings.
Result<std::map<std::string, std::string>> ParseTomlParams(const toml::node& node,
                                                           const std::string& where) {
  auto table = node.as_table();
  if (table == nullptr) {
    return Status::InvalidArgument(where + " is " + TomlTypeName(node) +
                                   ", expected a table like { max_w = 32 }");
  }
  std::map<std::string, std::string> params;
  for (auto&& [k, value] : *table) {
    auto text = ScalarText(value);
    if (!text) {
      return Status::InvalidArgument(where + "." + std::string(k.str()) + " is " +
                                     TomlTypeName(value) + ", expected a number or a string");
    }
    params[std::string(k.str())] = *text;
  }
  return params;
}

// The [sim] table: names to scalars as text (booleans "true"/"false", an
// array of integers as "1,2,3"); serene-sim interprets them.
Result<std::map<std::string, std::string>> ParseTomlSim(const toml::node& node,
                                                        const std::string& where) {
  const toml::table* t = node.as_table();
  if (t == nullptr) return Status::InvalidArgument(where + ": expected a [sim] table");
  std::map<std::string, std::string> sim;
  for (auto&& [k, value] : *t) {
    const std::string name(k.str());
    std::optional<std::string> text = ScalarText(value);
    if (auto b = value.as_boolean()) text = b->get() ? "true" : "false";
    if (auto arr = value.as_array(); arr != nullptr && arr->is_homogeneous<int64_t>()) {
      std::string list;
      for (const auto& v : *arr)
        list += (list.empty() ? "" : ",") + std::to_string(*v.value<int64_t>());
      text = list;
    }
    if (!text) {
      return Status::InvalidArgument(
          where + "." + name + " is " + TomlTypeName(value) +
          ", expected a number, a string, a boolean or a list of integers");
    }
    sim[name] = *text;
  }
  return sim;
}

Result<RunSpec> ParseTomlRun(const toml::table& t, const std::string& where) {
  RunSpec run;
  std::optional<std::string> label, policy, algorithm;
  bool has_params = false;
  for (auto&& [k, node] : t) {
    const std::string key(k.str());
    auto text = node.as_string();
    if (key == "params") {
      auto params = ParseTomlParams(node, where + ": params");
      if (!params.ok()) return params.status();
      run.params = std::move(*params);
      has_params = true;
      continue;
    }
    if (key != "label" && key != "backend" && key != "policy" && key != "algorithm") {
      return Status::InvalidArgument(where + ": unknown key '" + key +
                                     "' (expected label, backend, policy, params, algorithm)");
    }
    if (text == nullptr) {
      return Status::InvalidArgument(where + ": " + key + " is " + TomlTypeName(node) +
                                     ", expected a string");
    }
    if (key == "label") label = text->get();
    if (key == "policy") policy = text->get();
    if (key == "algorithm") algorithm = text->get();
    if (key == "backend") {
      auto b = ParseBackend(where + ": backend", text->get());
      if (!b.ok()) return b.status();
      run.backend = *b;
    }
  }
  if (algorithm && run.backend != BackendKind::kGloo) {
    return Status::InvalidArgument(where + ": algorithm '" + *algorithm +
                                   "' applies to a gloo run only (backend = \"gloo\")");
  }
  if (run.backend == BackendKind::kGloo) {
    run.policy = policy.value_or("");
    if (algorithm) {
      auto a = collective::ParseGlooAlgorithm(*algorithm);
      if (!a.ok()) return Status::InvalidArgument(where + ": algorithm: " + a.status().message());
      if (Status st = train::CheckGlooAlgorithm(*a); !st.ok()) {
        return Status::InvalidArgument(where + ": algorithm: " + st.message());
      }
      run.gloo_algorithm = *a;
    }
  } else {
    run.policy = policy.value_or("sync");
    if (auto s = CheckRunPolicy(where + ": policy", run.policy); !s.ok()) return s;
  }
  if (has_params && !IsPolicyScript(run.policy)) {
    return Status::InvalidArgument(where + ": " + ParamsMisplaced(run));
  }
  run.label = label.value_or(DefaultLabel(run.backend, run.policy, run.gloo_algorithm));
  return run;
}

std::string Real(double v) { return fmt::format("{}", v); }

std::string Quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A TOML key: bare when it can be, else quoted.
std::string TomlKey(const std::string& key) {
  const bool bare = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
  return bare ? key : Quoted(key);
}

// A param's value in TOML: a number when ScalarText reads the number back as
// the same text (so the scenario round-trips exactly), else a string.
std::string TomlParamValue(const std::string& v) {
  int64_t i = 0;
  double d = 0;
  if (ParseInt(v, &i) && std::to_string(i) == v) return v;
  if (ParseReal(v, &d) && fmt::format("{}", d) == v && v.find_first_of(".e") != std::string::npos) {
    return v;
  }
  return Quoted(v);
}

}  // namespace

std::string_view BackendName(BackendKind backend) {
  return backend == BackendKind::kGloo ? "gloo" : "serene";
}

Scenario DefaultScenario() {
  Scenario s;
  s.runs = {{"SYNC", BackendKind::kSerene, "sync"},
            {"SSP(10)", BackendKind::kSerene, "ssp:10"},
            {"ADAPTIVE", BackendKind::kSerene, "policies/adaptive.lua"},
            {"Gloo", BackendKind::kGloo, ""}};
  // serene-sim's compute model: what one MLP step of a rank takes on a core
  // of the development machine (docs/simulator.md). Fixed, so the simulated
  // demo is the same on every machine.
  s.sim = {{"compute_ms", "6.2"}};
  return s;
}

void ApplyQuick(Scenario* s) {
  s->workers = 2;
  s->steps = 30;
  s->target_accuracy = 0;
  s->eval_every = 10;
  s->eval_samples = 1000;
  s->timeout_s = std::min(s->timeout_s, 300.0);
}

const std::vector<std::string_view>& ScenarioKeys() {
  // clang-format off
  static const std::vector<std::string_view> keys = {
      "name",       "workers",         "model", "steps",   "target_accuracy",
      "eval_every", "eval_samples",    "seed",  "lr",      "momentum", "compute_floor_ms",
      "batch",      "straggler",       "straggler_ranks",  "row",      "threads", "timeout",
      "control_period_ms", "switch_fault", "group"};
  // clang-format on
  return keys;
}

Status SetScenarioValue(std::string_view key, std::string_view v, const std::string& where,
                        Scenario* s) {
  if (key == "name") {
    if (v.empty() || Slug(v).empty()) return Bad(where, v, "a name with letters or digits");
    s->name = std::string(v);
  } else if (key == "workers") {
    return SetInt(where, v, 1, kMaxRanks, &s->workers);
  } else if (key == "model") {
    auto m = train::ParseModelKind(v);
    if (!m.ok()) return Bad(where, v, "mlp or cnn");
    s->model = *m;
  } else if (key == "steps") {
    return SetInt(where, v, 1, int64_t{1} << 31, &s->steps);
  } else if (key == "target_accuracy") {
    double x = 0;
    if (!ParseReal(v, &x) || x < 0 || x > 1) {
      return Bad(where, v, "an accuracy in [0, 1] (0 = no target)");
    }
    s->target_accuracy = x;
  } else if (key == "eval_every") {
    return SetInt(where, v, 1, int64_t{1} << 31, &s->eval_every);
  } else if (key == "eval_samples") {
    return SetInt(where, v, 0, kTestExamples, &s->eval_samples);
  } else if (key == "seed") {
    if (!ParseUint64(v, &s->seed)) return Bad(where, v, "a 64-bit unsigned integer");
  } else if (key == "lr") {
    double x = 0;
    if (!ParseReal(v, &x) || x <= 0) return Bad(where, v, "a positive learning rate");
    s->learning_rate = x;
  } else if (key == "momentum") {
    double x = 0;
    if (!ParseReal(v, &x) || !(x >= 0 && x < 1)) return Bad(where, v, "a momentum in [0, 1)");
    s->momentum = x;
  } else if (key == "compute_floor_ms") {
    double x = 0;
    if (!ParseReal(v, &x) || !(x >= 0 && x <= 60000)) {
      return Bad(where, v, "milliseconds in [0, 60000] (0 = no floor)");
    }
    s->compute_floor_ms = x;
  } else if (key == "batch") {
    return SetInt(where, v, 1, kTrainExamples, &s->batch);
  } else if (key == "straggler") {
    auto spec = train::ParseStragglerSpec(v);
    if (!spec.ok()) return Status::InvalidArgument(where + ": " + spec.status().message());
    s->straggler = std::string(v);
  } else if (key == "straggler_ranks") {
    // Checked against the number of workers in ValidateScenario.
    s->straggler_ranks = std::string(v);
  } else if (key == "row") {
    return SetInt(where, v, 1, kMaxRow, &s->row);
  } else if (key == "threads") {
    return SetInt(where, v, 1, 256, &s->threads);
  } else if (key == "timeout") {
    double x = 0;
    if (!ParseReal(v, &x) || x <= 0) return Bad(where, v, "a positive number of seconds");
    s->timeout_s = x;
  } else if (key == "control_period_ms") {
    return SetInt(where, v, kMinControlPeriodMs, kMaxControlPeriodMs, &s->control_period_ms);
  } else if (key == "switch_fault") {
    // Checked by the switch's own parser, so the run cannot fail to start
    // on it; kept as written ("" for none/off).
    auto spec = net::FaultSpec::Parse(v);
    if (!spec.ok()) return Status::InvalidArgument(where + ": " + spec.status().message());
    s->switch_fault = spec->enabled() ? std::string(v) : std::string();
  } else if (key == "group") {
    if (v != "on" && v != "off") return Bad(where, v, "on or off");
    s->group = v == "on";
  } else {
    std::string keys;
    for (std::string_view k : ScenarioKeys()) keys += (keys.empty() ? "" : ", ") + std::string(k);
    return Status::InvalidArgument(where + ": unknown setting '" + std::string(key) +
                                   "' (expected " + keys + ")");
  }
  return Status::Ok();
}

bool IsPolicyScript(std::string_view policy) {
  return policy.size() > kScriptSuffix.size() &&
         policy.substr(policy.size() - kScriptSuffix.size()) == kScriptSuffix;
}

Result<std::string> ResolvePolicyScript(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  std::vector<fs::path> candidates = {p};
  if (p.is_relative()) {
    if (!std::string_view(SERENE_SOURCE_DIR).empty()) {
      candidates.push_back((fs::path(SERENE_SOURCE_DIR) / p).lexically_normal());
    }
    candidates.push_back((fs::path(loadgen::OwnBinaryDir()) / ".." / ".." / p).lexically_normal());
  }
  std::string tried;
  for (const fs::path& c : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(c, ec)) return c.string();
    if (tried.find(c.string()) == std::string::npos) {
      tried += (tried.empty() ? "" : ", ") + c.string();
    }
  }
  return Status::NotFound("policy script '" + path + "' not found (looked for " + tried + ")");
}

std::string DefaultLabel(BackendKind backend, std::string_view policy,
                         collective::GlooAlgorithm gloo_algorithm) {
  if (backend == BackendKind::kGloo) {
    if (gloo_algorithm == collective::GlooAlgorithm::kDefault) return "Gloo";
    return "Gloo(" + std::string(collective::GlooAlgorithmName(gloo_algorithm)) + ")";
  }
  if (IsPolicyScript(policy)) {
    std::string stem = std::filesystem::path(policy).stem().string();
    for (char& c : stem) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return stem;
  }
  auto p = dataplane::BarrierParams::Parse(policy);
  if (p.ok() && policy.find_first_of("=,") == std::string_view::npos) {
    const std::string text(policy);
    if (text == "sync") return "SYNC";
    if (text == "async") return "ASYNC";
    if (text.rfind("ssp:", 0) == 0) return "SSP(" + text.substr(4) + ")";
    if (text.rfind("quorum:", 0) == 0) {
      std::string args = text.substr(7);
      std::replace(args.begin(), args.end(), ':', ',');
      return "QUORUM(" + args + ")";
    }
  }
  return std::string(policy);
}

Result<std::vector<RunSpec>> ParseRunList(std::string_view text) {
  std::vector<RunSpec> runs;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    const std::string where = fmt::format("--runs item '{}'", item);
    RunSpec run;
    if (item == "gloo") {
      run.backend = BackendKind::kGloo;
      run.policy = "";
    } else if (item.rfind("gloo:", 0) == 0) {
      auto algorithm = collective::ParseGlooAlgorithm(item.substr(5));
      if (!algorithm.ok()) {
        return Status::InvalidArgument(
            where + ": gloo is a synchronous allreduce, it takes no policy (gloo:ALGORITHM " +
            "chooses its allreduce algorithm: " + algorithm.status().message() + ")");
      }
      if (Status s = train::CheckGlooAlgorithm(*algorithm); !s.ok()) {
        return Status::InvalidArgument(where + ": " + s.message());
      }
      run.backend = BackendKind::kGloo;
      run.policy = "";
      run.gloo_algorithm = *algorithm;
    } else {
      if (item.empty()) {
        return Status::InvalidArgument(
            "--runs: empty item (expected a comma-separated list like serene:sync,gloo)");
      }
      run.policy = std::string(item == "serene"                ? "sync"
                               : item.rfind("serene:", 0) == 0 ? item.substr(7)
                                                               : item);
      if (auto s = CheckRunPolicy(where + ": policy", run.policy); !s.ok()) {
        return Status::InvalidArgument(
            s.message() + " (items: gloo, gloo:ALGORITHM, serene, serene:POLICY, POLICY or a " +
            "policy script path ending in .lua)");
      }
    }
    run.label = DefaultLabel(run.backend, run.policy, run.gloo_algorithm);
    runs.push_back(std::move(run));
    start = comma + 1;
  }
  Deduplicate(&runs);
  return runs;
}

namespace {

// Files an `extends` chain may hold, the first one included: deeper is a
// mistake (a cycle is refused by name before that).
constexpr size_t kMaxExtendsChain = 8;

Result<Scenario> LoadScenarioFileIn(const std::string& path, std::vector<std::string>* chain);

// The scenario that `extends = "FILE"` names, FILE relative to the directory
// of `source` (the extending document's path); `chain` holds the files
// already being read, to refuse a cycle.
Result<Scenario> LoadExtendedScenario(const toml::node& node, const std::string& source,
                                      std::vector<std::string>* chain) {
  const std::string where = source + ": extends";
  const auto* name = node.as_string();
  if (name == nullptr || name->get().empty()) {
    return Status::InvalidArgument(where + " is " + TomlTypeName(node) +
                                   ", expected the path of a scenario file, e.g. "
                                   "extends = \"slowdown.toml\"");
  }
  const std::filesystem::path base =
      std::filesystem::path(source).parent_path() / std::filesystem::path(name->get());
  const std::string path = base.lexically_normal().string();
  std::error_code ec;
  const std::string canonical = std::filesystem::weakly_canonical(base, ec).string();
  if (std::find(chain->begin(), chain->end(), canonical) != chain->end()) {
    return Status::InvalidArgument(where + " = '" + name->get() + "': '" + path +
                                   "' is already being read (a cycle of extends)");
  }
  if (chain->size() >= kMaxExtendsChain) {
    return Status::InvalidArgument(where + " = '" + name->get() + "': more than " +
                                   std::to_string(kMaxExtendsChain) +
                                   " files in one chain of extends");
  }
  chain->push_back(canonical);
  Result<Scenario> s = LoadScenarioFileIn(path, chain);
  chain->pop_back();
  if (!s.ok()) {
    std::string msg = where + " = '" + name->get() + "': " + s.status().message();
    return s.status().code() == Status::Code::kNotFound ? Status::NotFound(std::move(msg))
                                                         : Status::InvalidArgument(std::move(msg));
  }
  return s;
}

Result<Scenario> ParseScenarioTomlIn(std::string_view text, std::string_view source,
                                     std::vector<std::string>* chain) {
  const std::string src(source);
  Result<toml::table> parsed = ParseTomlDocument(text, source);
  if (!parsed.ok()) return parsed.status();
  const toml::table& root = *parsed;
  Scenario s = DefaultScenario();
  // The [sim] table is the file's own (over the extended file's): one without
  // it leaves serene-sim's defaults (a compute model measured here), not the
  // embedded demo's.
  s.sim.clear();
  if (const toml::node* extends = root.get("extends")) {
    auto base = LoadExtendedScenario(*extends, src, chain);
    if (!base.ok()) return base.status();
    s = *std::move(base);
  }
  for (auto&& [k, node] : root) {
    const std::string key(k.str());
    const std::string where = src + ": " + key;
    if (key == "extends") continue;
    if (key == "run") {
      auto arr = node.as_array();
      if (arr == nullptr || !arr->is_array_of_tables() || arr->empty()) {
        return Status::InvalidArgument(where + ": expected [[run]] tables");
      }
      s.runs.clear();
      for (size_t i = 0; i < arr->size(); ++i) {
        auto run =
            ParseTomlRun(*arr->get(i)->as_table(), src + ": [[run]] #" + std::to_string(i + 1));
        if (!run.ok()) return run.status();
        s.runs.push_back(*run);
      }
      continue;
    }
    if (key == "sim") {
      auto sim = ParseTomlSim(node, where);
      if (!sim.ok()) return sim.status();
      // Key by key over the extended file's table (empty without extends).
      for (auto& [name, value] : *sim) s.sim[name] = value;
      continue;
    }
    if (std::find(ScenarioKeys().begin(), ScenarioKeys().end(), key) == ScenarioKeys().end()) {
      // SetScenarioValue's "unknown setting" message, and what only a file takes.
      return Status::InvalidArgument(SetScenarioValue(key, "", src, &s).message() +
                                     "; a file also takes extends, [sim] and [[run]]");
    }
    auto value = ScalarText(node);
    if (!value) {
      return Status::InvalidArgument(where + " is " + TomlTypeName(node) +
                                     ", expected a number or a string");
    }
    if (auto st = SetScenarioValue(key, *value, where, &s); !st.ok()) return st;
  }
  return s;
}

Result<Scenario> LoadScenarioFileIn(const std::string& path, std::vector<std::string>* chain) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::NotFound("cannot read scenario file '" + path + "': " + std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return ParseScenarioTomlIn(text.str(), path, chain);
}

// The chain of a document named `source`: its own file, when it is one.
std::vector<std::string> ChainOf(std::string_view source) {
  std::error_code ec;
  return {std::filesystem::weakly_canonical(std::filesystem::path(source), ec).string()};
}

}  // namespace

Result<Scenario> ParseScenarioToml(std::string_view text, std::string_view source) {
  std::vector<std::string> chain = ChainOf(source);
  return ParseScenarioTomlIn(text, source, &chain);
}

Result<Scenario> LoadScenarioFile(const std::string& path) {
  std::vector<std::string> chain = ChainOf(path);
  return LoadScenarioFileIn(path, &chain);
}

Status ValidateScenario(const Scenario& s) {
  if (s.runs.empty()) return Status::InvalidArgument("the scenario has no runs");
  for (size_t i = 0; i < s.runs.size(); ++i) {
    const RunSpec& run = s.runs[i];
    const std::string where = fmt::format("run #{} '{}'", i + 1, run.label);
    if (Slug(run.label).empty()) {
      return Status::InvalidArgument(where + ": a label needs letters or digits");
    }
    for (size_t j = 0; j < i; ++j) {
      if (s.runs[j].label == run.label) {
        return Status::InvalidArgument(where + ": label already used by run #" +
                                       std::to_string(j + 1));
      }
    }
    if (run.backend == BackendKind::kGloo) {
      if (!run.params.empty()) return Status::InvalidArgument(where + ": " + ParamsMisplaced(run));
      if (!run.policy.empty() && run.policy != "sync") {
        return Status::InvalidArgument(where + ": gloo is a synchronous allreduce; policy '" +
                                       run.policy + "' does not apply");
      }
      if (Status st = train::CheckGlooAlgorithm(run.gloo_algorithm); !st.ok()) {
        return Status::InvalidArgument(where + ": " + st.message());
      }
      continue;
    }
    if (run.gloo_algorithm != collective::GlooAlgorithm::kDefault) {
      return Status::InvalidArgument(
          where + ": Gloo algorithm '" +
          std::string(collective::GlooAlgorithmName(run.gloo_algorithm)) +
          "' applies to a gloo run only");
    }
    dataplane::BarrierParams rule;
    if (IsPolicyScript(run.policy)) {
      // Load it once now, so that a script error stops the experiment before
      // any process starts (the runner loads it again for the run).
      auto path = ResolvePolicyScript(run.policy);
      if (!path.ok()) return Status::NotFound(where + ": " + path.status().message());
      auto script = control::PolicyScript::LoadFile(*path, run.params);
      if (!script.ok()) {
        const std::string message = script.status().message();
        // LoadFile names the path itself when it cannot read the file.
        const std::string why =
            where + ": " +
            (message.rfind("policy script ", 0) == 0 ? message
                                                     : "policy script " + *path + ": " + message);
        return script.status().code() == Status::Code::kNotFound ? Status::NotFound(why)
                                                                 : Status::InvalidArgument(why);
      }
      if (!(*script)->initial()) continue;
      rule = (*script)->initial()->rule;  // a static rule: its quorum must fit too
    } else {
      if (!run.params.empty()) return Status::InvalidArgument(where + ": " + ParamsMisplaced(run));
      if (auto st = CheckPolicy(where + ": policy", run.policy); !st.ok()) return st;
      rule = *dataplane::BarrierParams::Parse(run.policy);
    }
    if (rule.quorum != dataplane::BarrierParams::kAllWorkers &&
        rule.quorum > static_cast<uint32_t>(s.workers)) {
      return Status::InvalidArgument(
          fmt::format("{}: quorum {} is more than the {} workers", where, rule.quorum, s.workers));
    }
  }
  auto ranks = train::ParseRankList(s.straggler_ranks, s.workers);
  if (!ranks.ok()) {
    return Status::InvalidArgument("straggler_ranks '" + s.straggler_ranks +
                                   "': " + ranks.status().message());
  }
  const int64_t shard = kTrainExamples / s.workers;
  if (s.batch > shard) {
    return Status::InvalidArgument(fmt::format(
        "batch {} is larger than a rank's shard ({} training examples / {} workers = {})", s.batch,
        kTrainExamples, s.workers, shard));
  }
  return Status::Ok();
}

std::string ScenarioValueText(const Scenario& s, std::string_view key) {
  if (key == "name") return s.name;
  if (key == "workers") return std::to_string(s.workers);
  if (key == "model") return std::string(train::ModelKindName(s.model));
  if (key == "steps") return std::to_string(s.steps);
  if (key == "target_accuracy") return Real(s.target_accuracy);
  if (key == "eval_every") return std::to_string(s.eval_every);
  if (key == "eval_samples") return std::to_string(s.eval_samples);
  if (key == "seed") return std::to_string(s.seed);
  if (key == "lr") return Real(s.learning_rate);
  if (key == "momentum") return Real(s.momentum);
  if (key == "compute_floor_ms") return Real(s.compute_floor_ms);
  if (key == "batch") return std::to_string(s.batch);
  if (key == "straggler") return s.straggler;
  if (key == "straggler_ranks") return s.straggler_ranks;
  if (key == "row") return std::to_string(s.row);
  if (key == "threads") return std::to_string(s.threads);
  if (key == "timeout") return Real(s.timeout_s);
  if (key == "control_period_ms") return std::to_string(s.control_period_ms);
  if (key == "switch_fault") return s.switch_fault.empty() ? "none" : s.switch_fault;
  if (key == "group") return s.group ? "on" : "off";
  return "";
}

std::string ScenarioToToml(const Scenario& s) {
  std::string t = "# serene-experiment scenario (docs/experiments.md)\n";
  for (std::string_view key : ScenarioKeys()) {
    const std::string value = ScenarioValueText(s, key);
    // Text settings are quoted; so is a seed beyond TOML's signed 64 bits.
    const bool text = key == "name" || key == "model" || key == "straggler" ||
                      key == "straggler_ranks" || key == "switch_fault" || key == "group" ||
                      (key == "seed" && s.seed > static_cast<uint64_t>(INT64_MAX));
    t += std::string(key) + " = " + (text ? Quoted(value) : value) + "\n";
  }
  if (!s.sim.empty()) {
    t += "\n[sim]\n";
    for (const auto& [name, value] : s.sim) {
      const bool plain = value == "true" || value == "false";
      t += TomlKey(name) + " = " + (plain ? value : TomlParamValue(value)) + "\n";
    }
  }
  for (const RunSpec& run : s.runs) {
    t += "\n[[run]]\nlabel = " + Quoted(run.label) +
         "\nbackend = " + Quoted(BackendName(run.backend)) + "\n";
    if (run.backend == BackendKind::kSerene) t += "policy = " + Quoted(run.policy) + "\n";
    if (run.backend == BackendKind::kGloo &&
        run.gloo_algorithm != collective::GlooAlgorithm::kDefault) {
      t += "algorithm = " + Quoted(collective::GlooAlgorithmName(run.gloo_algorithm)) + "\n";
    }
    if (!run.params.empty()) {
      std::string params;
      for (const auto& [name, value] : run.params) {
        params += (params.empty() ? "" : ", ") + TomlKey(name) + " = " + TomlParamValue(value);
      }
      t += "params = { " + params + " }\n";
    }
  }
  return t;
}

std::string Slug(std::string_view label) {
  std::string out;
  for (char c : label) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) {
      out += static_cast<char>(std::tolower(u));
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

}  // namespace serene::experiment
