// ModelLayout: the models as one flat float vector.
//
// The switch holds a model as one contiguous vector of floats (rows of it),
// so a model here *is* that vector: a layout lists its parameter tensors
// (name, shape, offset) in a fixed order, and the network (network.h)
// computes on views of the flat vector. No copy between "module parameters"
// and "flat vector" is ever needed; Flatten/Unflatten exist for checkpoints,
// inspection and tests.
//
// Models:
//   mlp: 784-100-10, ReLU                                  (79,510 floats)
//   cnn: LeNet-5 geometry: conv 5x5x6 (pad 2) - maxpool 2 - conv 5x5x16 -
//        maxpool 2 - fc 400-120 - fc 120-84 - fc 84-10, ReLU (61,706 floats)
//
// Initialization follows PyTorch's defaults for Linear/Conv2d (weights and
// biases uniform in ±1/sqrt(fan_in)) but draws from our own seeded Rng, so
// the initial model depends on the seed only, not on libtorch's global
// generator or version.
//
// Thread-safety: all functions are pure; layouts are immutable statics.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace serene::train {

enum class ModelKind { kMlp, kCnn };

// "mlp" or "cnn". Errors: InvalidArgument naming the accepted values.
Result<ModelKind> ParseModelKind(std::string_view name);
std::string_view ModelKindName(ModelKind kind);

struct ParamSpec {
  std::string name;            // e.g. "fc1.weight"
  std::vector<int64_t> shape;  // PyTorch order: [out, in] / [out, in, kh, kw] / [out]
  size_t offset = 0;           // first element in the flat vector
  size_t size = 0;             // product of shape
  size_t fan_in = 0;           // inputs per output unit (sets the init bound)
};

// The parameters of `kind` in flat-vector order; offsets are contiguous from 0.
const std::vector<ParamSpec>& ModelLayout(ModelKind kind);

// Total floats in the flat vector (mlp: 79510, cnn: 61706).
size_t ParameterCount(ModelKind kind);

// The initial model for `seed`: identical for identical (kind, seed).
std::vector<float> InitialParameters(ModelKind kind, uint64_t seed);

// Named copies of each parameter. Errors: InvalidArgument on a size mismatch.
Result<std::map<std::string, std::vector<float>>> Unflatten(ModelKind kind,
                                                            std::span<const float> flat);
// The flat vector from named parameters. Errors: InvalidArgument if a
// parameter is missing, unknown or has the wrong size.
Result<std::vector<float>> Flatten(ModelKind kind,
                                   const std::map<std::string, std::vector<float>>& named);

}  // namespace serene::train
