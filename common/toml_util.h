// Helpers shared by the TOML config readers (serene-switch's config file,
// serene-experiment's scenarios). Include only where toml++ is linked.
#pragma once

#include <string>
#include <toml++/toml.h>

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

}  // namespace serene
