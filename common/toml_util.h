// Helpers shared by the TOML config readers (serene-switch's config file,
// serene-experiment's scenarios). Include only where toml++ is linked.
#pragma once

#include <string>
#include <string_view>
#include <toml++/toml.h>

#include "common/status.h"

namespace serene {

// "a table", "an integer", ...: for messages like "key 'port' is a string,
// expected an integer".
inline std::string TomlTypeName(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    default: return "a date/time";
  }
}

// Parses a TOML document; a syntax error becomes InvalidArgument
// "SOURCE:LINE:COLUMN: description".
inline Result<toml::table> ParseTomlDocument(std::string_view text, std::string_view source) {
  const std::string src(source);
  try {
    return toml::parse(text, src);
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument(src + ":" + std::to_string(e.source().begin.line) + ":" +
                                   std::to_string(e.source().begin.column) + ": " +
                                   std::string(e.description()));
  }
}

}  // namespace serene
