#include "collective/gloo_algorithm.h"

#include <array>

namespace serene::collective {
namespace {

constexpr std::array kAll = {GlooAlgorithm::kDefault, GlooAlgorithm::kHalvingDoubling,
                             GlooAlgorithm::kBcube, GlooAlgorithm::kRing,
                             GlooAlgorithm::kRingChunked};

std::string Names() {
  std::string s;
  for (GlooAlgorithm a : kAll) {
    if (!s.empty()) s += ", ";
    s += GlooAlgorithmName(a);
  }
  return s;
}

}  // namespace

std::span<const GlooAlgorithm> AllGlooAlgorithms() { return kAll; }

std::string_view GlooAlgorithmName(GlooAlgorithm a) {
  switch (a) {
    case GlooAlgorithm::kDefault: return "default";
    case GlooAlgorithm::kHalvingDoubling: return "halving-doubling";
    case GlooAlgorithm::kBcube: return "bcube";
    case GlooAlgorithm::kRing: return "ring";
    case GlooAlgorithm::kRingChunked: return "ring-chunked";
  }
  return "?";
}

Result<GlooAlgorithm> ParseGlooAlgorithm(std::string_view name) {
  for (GlooAlgorithm a : kAll) {
    if (name == GlooAlgorithmName(a)) return a;
  }
  return Status::InvalidArgument("unknown Gloo algorithm '" + std::string(name) +
                                 "': expected one of " + Names());
}

Result<std::vector<GlooAlgorithm>> ParseGlooAlgorithms(std::string_view list) {
  if (list == "all") return std::vector<GlooAlgorithm>(kAll.begin(), kAll.end());
  std::vector<GlooAlgorithm> out;
  while (true) {
    const size_t comma = list.find(',');
    auto a = ParseGlooAlgorithm(list.substr(0, comma));
    if (!a.ok()) return a.status();
    for (GlooAlgorithm seen : out) {
      if (seen == *a) {
        return Status::InvalidArgument("Gloo algorithm '" + std::string(GlooAlgorithmName(*a)) +
                                       "' is listed twice");
      }
    }
    out.push_back(*a);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace serene::collective
