// GlooAlgorithm: which of Gloo's allreduce implementations to run.
//
// `default` is gloo::allreduce with default options — what PyTorch's Gloo
// process group runs (a ring for one buffer). The others are Gloo's
// algorithm classes, built once per buffer and run many times:
// halving-doubling (Rabenseifner: reduce-scatter and allgather by recursive
// halving and doubling, log2(N) steps), bcube, ring and ring-chunked.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace serene::collective {

enum class GlooAlgorithm { kDefault, kHalvingDoubling, kBcube, kRing, kRingChunked };

// Every algorithm, in the order reports list them.
std::span<const GlooAlgorithm> AllGlooAlgorithms();
std::string_view GlooAlgorithmName(GlooAlgorithm a);
// Accepts the names GlooAlgorithmName gives; the error lists them.
Result<GlooAlgorithm> ParseGlooAlgorithm(std::string_view name);
// A comma-separated list, or "all".
Result<std::vector<GlooAlgorithm>> ParseGlooAlgorithms(std::string_view list);

}  // namespace serene::collective
