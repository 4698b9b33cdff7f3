#include "train/model_layout.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "train/rng.h"

namespace serene::train {
namespace {

constexpr uint64_t kInitStream = 0x696e6974;  // "init"

class LayoutBuilder {
 public:
  void Linear(const std::string& name, int64_t in, int64_t out) {
    Add(name + ".weight", {out, in}, static_cast<size_t>(in));
    Add(name + ".bias", {out}, static_cast<size_t>(in));
  }
  void Conv(const std::string& name, int64_t in, int64_t out, int64_t k) {
    const auto fan_in = static_cast<size_t>(in * k * k);
    Add(name + ".weight", {out, in, k, k}, fan_in);
    Add(name + ".bias", {out}, fan_in);
  }
  std::vector<ParamSpec> Build() { return std::move(specs_); }

 private:
  void Add(std::string name, std::vector<int64_t> shape, size_t fan_in) {
    size_t size = 1;
    for (int64_t d : shape) size *= static_cast<size_t>(d);
    specs_.push_back({std::move(name), std::move(shape), offset_, size, fan_in});
    offset_ += size;
  }
  std::vector<ParamSpec> specs_;
  size_t offset_ = 0;
};

std::vector<ParamSpec> MakeMlp() {
  LayoutBuilder b;
  b.Linear("fc1", 784, 100);
  b.Linear("fc2", 100, 10);
  return b.Build();
}

std::vector<ParamSpec> MakeCnn() {
  LayoutBuilder b;
  b.Conv("conv1", 1, 6, 5);
  b.Conv("conv2", 6, 16, 5);
  b.Linear("fc1", 16 * 5 * 5, 120);
  b.Linear("fc2", 120, 84);
  b.Linear("fc3", 84, 10);
  return b.Build();
}

}  // namespace

Result<ModelKind> ParseModelKind(std::string_view name) {
  if (name == "mlp") return ModelKind::kMlp;
  if (name == "cnn") return ModelKind::kCnn;
  return Status::InvalidArgument("unknown model '" + std::string(name) + "' (expected mlp or cnn)");
}

std::string_view ModelKindName(ModelKind kind) { return kind == ModelKind::kMlp ? "mlp" : "cnn"; }

const std::vector<ParamSpec>& ModelLayout(ModelKind kind) {
  static const std::vector<ParamSpec> mlp = MakeMlp();
  static const std::vector<ParamSpec> cnn = MakeCnn();
  return kind == ModelKind::kMlp ? mlp : cnn;
}

size_t ParameterCount(ModelKind kind) {
  const ParamSpec& last = ModelLayout(kind).back();
  return last.offset + last.size;
}

std::vector<float> InitialParameters(ModelKind kind, uint64_t seed) {
  std::vector<float> flat(ParameterCount(kind));
  Rng rng(DeriveSeed(seed, kInitStream));
  for (const ParamSpec& p : ModelLayout(kind)) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(p.fan_in));
    for (size_t i = 0; i < p.size; ++i) {
      flat[p.offset + i] = static_cast<float>(rng.Uniform(-bound, bound));
    }
  }
  return flat;
}

Result<std::map<std::string, std::vector<float>>> Unflatten(ModelKind kind,
                                                            std::span<const float> flat) {
  if (flat.size() != ParameterCount(kind)) {
    return Status::InvalidArgument("flat " + std::string(ModelKindName(kind)) + " model has " +
                                   std::to_string(flat.size()) + " floats, expected " +
                                   std::to_string(ParameterCount(kind)));
  }
  std::map<std::string, std::vector<float>> named;
  for (const ParamSpec& p : ModelLayout(kind)) {
    auto part = flat.subspan(p.offset, p.size);
    named.emplace(p.name, std::vector<float>(part.begin(), part.end()));
  }
  return named;
}

Result<std::vector<float>> Flatten(ModelKind kind,
                                   const std::map<std::string, std::vector<float>>& named) {
  const std::vector<ParamSpec>& layout = ModelLayout(kind);
  if (named.size() != layout.size()) {
    return Status::InvalidArgument(std::to_string(named.size()) + " named parameters, " +
                                   std::string(ModelKindName(kind)) + " has " +
                                   std::to_string(layout.size()));
  }
  std::vector<float> flat(ParameterCount(kind));
  for (const ParamSpec& p : layout) {
    auto it = named.find(p.name);
    if (it == named.end()) return Status::InvalidArgument("missing parameter " + p.name);
    if (it->second.size() != p.size) {
      return Status::InvalidArgument("parameter " + p.name + " has " +
                                     std::to_string(it->second.size()) + " floats, expected " +
                                     std::to_string(p.size));
    }
    std::copy(it->second.begin(), it->second.end(),
              flat.begin() + static_cast<ptrdiff_t>(p.offset));
  }
  return flat;
}

}  // namespace serene::train
