// Walking "key=value,key=value" specs (--fault, --link, ...): one loop for
// every parser, which keeps only its per-key checks.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace serene {

// Calls fn(key, value) for each comma-separated item of `text` (empty items are
// skipped; a value may be empty) and returns the first non-ok Status fn
// returns, or InvalidArgument("'ITEM' is not key=value") for an item without
// '='. The caller adds the context (which spec, what was expected).
template <typename Fn>
Status ForEachKeyValue(std::string_view text, Fn&& fn) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = text.substr(start, end - start);
    start = end + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return Status::InvalidArgument("'" + std::string(item) + "' is not key=value");
    }
    Status s = fn(item.substr(0, eq), item.substr(eq + 1));
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace serene
