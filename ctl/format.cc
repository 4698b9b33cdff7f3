#include "ctl/format.h"

#include <fmt/format.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cmath>

#include "common/check.h"

namespace serene::ctl {
namespace {

// "1.50" -> "1.5", "2.0" -> "2"; leaves numbers without a point alone.
std::string TrimZeros(std::string s) {
  if (s.find('.') == std::string::npos) return s;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

// `v` in [1, 1000): one decimal below 10, none above.
std::string Scaled(double v, const char* unit) {
  if (v < 9.95) return TrimZeros(fmt::format("{:.1f}", v)) + unit;
  return fmt::format("{:.0f}{}", v, unit);
}

}  // namespace

Table::Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

void Table::AddRow(std::vector<std::string> cells) {
  SERENE_CHECK(cells.size() == columns_.size(), "a table row needs one cell per column");
  rows_.push_back(std::move(cells));
}

std::string Table::Render() const {
  std::vector<size_t> width(columns_.size());
  for (size_t c = 0; c < columns_.size(); ++c) {
    width[c] = columns_[c].name.size();
    for (const auto& row : rows_) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  auto line = [&](auto cell_of) {
    std::string text;
    for (size_t c = 0; c < columns_.size(); ++c) {
      const std::string& cell = cell_of(c);
      if (c > 0) text += "  ";
      const std::string pad(width[c] - cell.size(), ' ');
      text += columns_[c].right ? pad + cell : cell + pad;
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text;
    out += '\n';
  };
  line([&](size_t c) -> const std::string& { return columns_[c].name; });
  for (const auto& row : rows_) line([&](size_t c) -> const std::string& { return row[c]; });
  return out;
}

std::string FormatClock(int64_t clock) { return clock < 0 ? "-" : std::to_string(clock); }

std::string HumanDuration(uint64_t ns) {
  if (ns == 0) return "0";
  if (ns < 1'000) return std::to_string(ns) + "ns";
  const double v = static_cast<double>(ns);
  if (ns < 999'500) return Scaled(v / 1e3, "us");
  if (ns < 999'500'000) return Scaled(v / 1e6, "ms");
  if (ns < 59'500'000'000) return Scaled(v / 1e9, "s");
  const auto seconds = static_cast<uint64_t>(std::llround(v / 1e9));
  if (seconds < 3600) return fmt::format("{}m{:02}s", seconds / 60, seconds % 60);
  const auto minutes = static_cast<uint64_t>(std::llround(v / 60e9));
  return fmt::format("{}h{:02}m", minutes / 60, minutes % 60);
}

std::string HumanDurationOrDash(int64_t ns) {
  return ns < 0 ? "-" : HumanDuration(static_cast<uint64_t>(ns));
}

std::string YesNo(bool b) { return b ? "yes" : "no"; }

std::string RuleText(const v1::Rule& rule) {
  if (!rule.text().empty()) return rule.text();
  auto num = [](uint32_t v, const char* unbounded) {
    return v == 0xFFFFFFFFu ? std::string(unbounded) : std::to_string(v);
  };
  return "window=" + num(rule.window(), "inf") +
         ",quorum=" + (rule.quorum() == 0 ? std::string("all") : std::to_string(rule.quorum())) +
         ",lag=" + num(rule.lag(), "inf");
}

std::string HexKey(uint32_t key) { return fmt::format("{:#010x}", key); }

std::string FormatRate(double per_second) {
  if (!(per_second > 0)) return "0";
  if (per_second < 10) return TrimZeros(fmt::format("{:.2f}", per_second));
  if (per_second < 100) return TrimZeros(fmt::format("{:.1f}", per_second));
  return fmt::format("{:.0f}", per_second);
}

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string out;
  auto status = google::protobuf::util::MessageToJsonString(message, &out, options);
  // Only a message with unknown Any types fails; the runtime API has none.
  SERENE_CHECK(status.ok(), "a runtime API message did not convert to JSON");
  return out;
}

}  // namespace serene::ctl
