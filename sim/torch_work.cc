#include "sim/torch_work.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "include/serene/client.h"
#include "train/batcher.h"
#include "train/momentum.h"
#include "train/network.h"

namespace serene::sim {

struct TorchWork::Impl {
  TorchWorkOptions options;
  const train::Dataset* test = nullptr;
  std::unique_ptr<train::Network> network;
  std::vector<std::unique_ptr<train::ShardedBatcher>> batchers;  // by rank
  train::Batch batch;
  std::vector<float> params, grad, scaled;
  std::vector<std::vector<float>> velocity;  // by rank; empty without momentum
};

TorchWork::TorchWork(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TorchWork::~TorchWork() = default;

Result<std::unique_ptr<TorchWork>> TorchWork::Create(const TorchWorkOptions& options,
                                                     const train::Dataset& train,
                                                     const train::Dataset& test) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->test = &test;
  auto network = train::Network::Create(options.model);
  if (!network.ok()) return network.status();
  impl->network = std::move(*network);
  for (int r = 0; r < options.workers; ++r) {
    train::BatcherOptions b;
    b.rank = r;
    b.world_size = options.workers;
    b.batch_size = options.batch;
    b.seed = options.seed;
    auto batcher = train::ShardedBatcher::Create(train, b);
    if (!batcher.ok()) return batcher.status();
    impl->batchers.push_back(std::move(*batcher));
  }
  impl->params.resize(impl->network->parameter_count());
  impl->grad.resize(impl->network->parameter_count());
  if (options.momentum > 0) {
    impl->scaled.resize(impl->grad.size());
    impl->velocity.assign(static_cast<size_t>(options.workers),
                          std::vector<float>(impl->grad.size()));
  }
  return std::unique_ptr<TorchWork>(new TorchWork(std::move(impl)));
}

size_t TorchWork::elements() const { return impl_->params.size(); }

Status TorchWork::InitialModel(std::span<int32_t> out) {
  const std::vector<float> initial =
      train::InitialParameters(impl_->options.model, impl_->options.seed);
  return Quantize(initial, impl_->options.scale_log2, out);
}

Result<double> TorchWork::Step(int rank, std::span<const int32_t> pulled,
                               std::span<int32_t> update) {
  Impl& s = *impl_;
  Dequantize(pulled, s.options.scale_log2, s.params);
  s.batchers[static_cast<size_t>(rank)]->Next(&s.batch);
  Result<float> loss = s.network->Gradient(s.params, s.batch, s.grad);
  if (!loss.ok()) return loss.status();
  const float scale = static_cast<float>(-s.options.learning_rate / s.options.workers);
  if (s.velocity.empty()) {
    for (float& g : s.grad) g *= scale;
    if (Status q = Quantize(s.grad, s.options.scale_log2, update); !q.ok()) return q;
  } else {
    train::ApplyMomentum(static_cast<float>(s.options.momentum), s.grad,
                         s.velocity[static_cast<size_t>(rank)], scale, s.scaled);
    if (Status q = Quantize(s.scaled, s.options.scale_log2, update); !q.ok()) return q;
  }
  return static_cast<double>(*loss);
}

Result<std::optional<Evaluation>> TorchWork::Evaluate(std::span<const int32_t> pulled) {
  Impl& s = *impl_;
  Dequantize(pulled, s.options.scale_log2, s.params);
  auto r = s.network->Evaluate(s.params, *s.test, s.options.eval_samples);
  if (!r.ok()) return r.status();
  return std::optional<Evaluation>(Evaluation{r->accuracy, r->loss});
}

}  // namespace serene::sim

namespace serene::sim {

Result<double> MeasureStepSeconds(const TorchWorkOptions& options, const train::Dataset& train,
                                  int steps) {
  TorchWorkOptions one = options;
  one.workers = 1;
  auto work = TorchWork::Create(one, train, train);
  if (!work.ok()) return work.status();
  std::vector<int32_t> model((*work)->elements()), update(model.size());
  if (Status s = (*work)->InitialModel(model); !s.ok()) return s;
  std::vector<double> took;
  for (int i = 0; i < steps + 2; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto loss = (*work)->Step(0, model, update);
    if (!loss.ok()) return loss.status();
    if (i >= 2) {  // the first steps warm libtorch's allocator up
      took.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  std::nth_element(took.begin(), took.begin() + took.size() / 2, took.end());
  return took[took.size() / 2];
}

}  // namespace serene::sim
