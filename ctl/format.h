// Output formats of serene-ctl: aligned tables and values for people, JSON
// for scripts. People see clocks as numbers or "-" (no clock yet), durations
// as "12ms" or "1.5s", flags as yes/no; scripts get the runtime API's
// messages as JSON with the field names of control/runtime.proto.
//
// Pure functions and a value type; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "control/runtime.pb.h"

namespace serene::ctl {

namespace v1 = ::serene::control::v1;

// A table of text cells printed with aligned columns: two spaces between
// columns; a column is aligned left or right (numbers) as declared, its
// header with it. No trailing spaces.
class Table {
 public:
  struct Column {
    std::string name;
    bool right = false;  // align right (numbers, durations)
  };
  explicit Table(std::vector<Column> columns);

  // REQUIRES: cells.size() == the number of columns.
  void AddRow(std::vector<std::string> cells);
  size_t rows() const { return rows_.size(); }

  // The header line, then one line per row, each ending with '\n'.
  std::string Render() const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// A clock as the API sends it: "-" for -1 (no clock yet), else the number.
std::string FormatClock(int64_t clock);

// A duration for people, about three significant digits: "0", "850ns",
// "12us", "1.5ms", "12ms", "150ms", "1.5s", "12s", "2m03s", "1h02m".
std::string HumanDuration(uint64_t ns);

// HumanDuration, or "-" for a negative value (the API's "never").
std::string HumanDurationOrDash(int64_t ns);

std::string YesNo(bool b);

// "sync", "ssp:10", ...: the rule's text, or its fields when the server left
// the text empty.
std::string RuleText(const v1::Rule& rule);

// "0x1a2b3c4d".
std::string HexKey(uint32_t key);

// A rate with the precision it deserves: "0", "0.25", "9.5", "120".
std::string FormatRate(double per_second);

// The message as one line of JSON: field names as in runtime.proto
// (preserve_proto_field_names), fields with default values included, 64-bit
// integers as strings (the proto3 JSON mapping). No trailing newline.
std::string ToJson(const google::protobuf::Message& message);

}  // namespace serene::ctl
