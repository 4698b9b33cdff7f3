#include "sim/sim_settings.h"

#include <algorithm>

#include "common/duration.h"
#include "common/parse.h"

namespace serene::sim {

const std::vector<std::string_view>& SimSettingKeys() {
  static const std::vector<std::string_view> kKeys = {
      "link",           "switch_us",   "compute_ms", "jitter",        "eval_ms",
      "straggler_base", "timing_only", "seeds",      "max_virtual_s", "evict_after_s"};
  return kKeys;
}

std::string_view StragglerBaseName(StragglerBase base) {
  switch (base) {
    case StragglerBase::kIteration:
      return "iteration";
    case StragglerBase::kWallIteration:
      return "wall_iteration";
    case StragglerBase::kCompute:
      break;
  }
  return "compute";
}

Status SetSimSetting(std::string_view key, std::string_view value, const std::string& where,
                     SimSettings* s) {
  const std::string v(value);
  auto bad = [&](const std::string& expected) {
    return Status::InvalidArgument(where + " '" + v + "': expected " + expected);
  };
  if (key == "link") {
    auto link = LinkSpec::Parse(value);
    if (!link.ok()) return Status::InvalidArgument(where + ": " + link.status().message());
    s->link = *link;
  } else if (key == "switch_us") {
    double us = 0;
    if (!ParseDouble(value, &us) || us < 0 || us > 1e6) {
      return bad("the switch's time per packet in microseconds, 0..1000000 (0 = at arrival)");
    }
    s->switch_service_s = us * 1e-6;
  } else if (key == "compute_ms") {
    double ms = 0;
    if (value == "auto") {
      s->compute_s.reset();
    } else if (ParseDouble(value, &ms) && ms > 0 && ms <= 3.6e6) {
      s->compute_s = ms * 1e-3;
    } else {
      return bad("a time per step in milliseconds > 0, or auto");
    }
  } else if (key == "jitter") {
    if (!ParseDouble(value, &s->jitter) || s->jitter < 0 || s->jitter >= 1) {
      return bad("a fraction in [0, 1)");
    }
  } else if (key == "eval_ms") {
    double ms = 0;
    if (!ParseDouble(value, &ms) || ms < 0 || ms > 3.6e6) {
      return bad("a time per evaluation in milliseconds >= 0");
    }
    s->eval_s = ms * 1e-3;
  } else if (key == "straggler_base") {
    if (value == "compute") {
      s->straggler_base = StragglerBase::kCompute;
    } else if (value == "iteration") {
      s->straggler_base = StragglerBase::kIteration;
    } else if (value == "wall_iteration") {
      s->straggler_base = StragglerBase::kWallIteration;
    } else {
      return bad("compute, iteration or wall_iteration");
    }
  } else if (key == "timing_only") {
    if (value != "true" && value != "false") return bad("true or false");
    s->timing_only = value == "true";
  } else if (key == "seeds") {
    std::vector<uint64_t> seeds;
    size_t start = 0;
    while (start <= value.size()) {
      size_t end = value.find(',', start);
      if (end == std::string_view::npos) end = value.size();
      uint64_t seed = 0;
      if (!ParseUint64(value.substr(start, end - start), &seed)) {
        return bad("a comma-separated list of seeds, e.g. 1,2,3");
      }
      if (std::find(seeds.begin(), seeds.end(), seed) != seeds.end()) {
        return bad("distinct seeds (" + std::to_string(seed) + " is listed twice)");
      }
      seeds.push_back(seed);
      start = end + 1;
    }
    s->seeds = std::move(seeds);
  } else if (key == "max_virtual_s") {
    if (!ParseDouble(value, &s->max_virtual_s) || s->max_virtual_s <= 0) {
      return bad("a number of virtual seconds > 0");
    }
  } else if (key == "evict_after_s") {
    if (!ParseDouble(value, &s->evict_after_s) || s->evict_after_s < 0 || s->evict_after_s > 3600) {
      return bad("seconds of silence before the switch evicts a rank, 0..3600 (0 = never)");
    }
  } else {
    std::string keys;
    for (std::string_view k : SimSettingKeys()) keys += (keys.empty() ? "" : ", ") + std::string(k);
    return Status::InvalidArgument(where + ": unknown setting; [sim] takes " + keys);
  }
  return Status::Ok();
}

Result<SimSettings> SimSettingsFromTable(const std::map<std::string, std::string>& table,
                                         const std::string& source) {
  SimSettings s;
  for (const auto& [key, value] : table) {
    if (Status st = SetSimSetting(key, value, source + ": [sim] " + key, &s); !st.ok()) return st;
  }
  return s;
}

}  // namespace serene::sim
