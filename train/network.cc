// The only translation unit of the trainer that includes libtorch.
#include "train/network.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <string>
#include <utility>
#include <vector>

namespace serene::train {
namespace {

constexpr size_t kEvalChunk = 1000;

// The compute thread count every computing thread uses (SetComputeThreads).
std::atomic<int> g_compute_threads{1};

// Makes the calling thread compute with g_compute_threads threads. OpenMP's
// thread count is a per-thread setting: a thread that never set it runs
// OpenBLAS with the runtime's default (the machine's cores, or
// OMP_NUM_THREADS), and on some kernels (OpenBLAS's Cooperlake sgemm) the
// rows a thread is given change the rounding. Two threads that compute the
// same step with different counts then disagree in the last bit, so every
// thread that computes pins itself, whatever the environment says.
void PinComputeThreads() {
  thread_local int pinned = 0;
  const int want = g_compute_threads.load(std::memory_order_relaxed);
  if (pinned == want) return;
  at::set_num_threads(want);
  pinned = want;
}

Status TorchError(const char* what, const std::exception& e) {
  std::string msg = e.what();
  // c10::Error messages carry a long backtrace after the first line.
  if (auto nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);
  return Status::Internal(std::string("libtorch failed in ") + what + ": " + msg);
}

}  // namespace

struct Network::Impl {
  ModelKind kind;
  std::vector<ParamSpec> layout;

  // Named views of the flat parameter tensor, in layout order.
  std::vector<at::Tensor> Views(const at::Tensor& flat) const {
    std::vector<at::Tensor> views;
    views.reserve(layout.size());
    for (const ParamSpec& p : layout) {
      views.push_back(flat.narrow(0, static_cast<int64_t>(p.offset), static_cast<int64_t>(p.size))
                          .view(p.shape));
    }
    return views;
  }

  // Logits for inputs x of shape [B, 784].
  at::Tensor Forward(const at::Tensor& flat, const at::Tensor& x) const {
    const std::vector<at::Tensor> w = Views(flat);
    if (kind == ModelKind::kMlp) {
      at::Tensor h = at::relu(at::linear(x, w[0], w[1]));
      return at::linear(h, w[2], w[3]);
    }
    at::Tensor h = x.view({x.size(0), 1, 28, 28});
    h = at::max_pool2d(at::relu(at::conv2d(h, w[0], w[1], {1, 1}, {2, 2})), {2, 2});
    h = at::max_pool2d(at::relu(at::conv2d(h, w[2], w[3])), {2, 2});
    h = h.flatten(1);
    h = at::relu(at::linear(h, w[4], w[5]));
    h = at::relu(at::linear(h, w[6], w[7]));
    return at::linear(h, w[8], w[9]);
  }
};

Network::Network(ModelKind kind, std::unique_ptr<Impl> impl)
    : kind_(kind), parameter_count_(ParameterCount(kind)), impl_(std::move(impl)) {}

Network::~Network() = default;

Result<std::unique_ptr<Network>> Network::Create(ModelKind kind) {
  auto impl = std::make_unique<Impl>();
  impl->kind = kind;
  impl->layout = ModelLayout(kind);
  return std::unique_ptr<Network>(new Network(kind, std::move(impl)));
}

Result<float> Network::Gradient(std::span<const float> params, const Batch& batch,
                                std::span<float> grad) {
  if (params.size() != parameter_count_ || grad.size() != parameter_count_) {
    return Status::InvalidArgument("Gradient: parameter/gradient size mismatch");
  }
  try {
    PinComputeThreads();
    const auto options = at::TensorOptions().dtype(at::kFloat);
    // Autograd never writes a leaf's data, so wrapping the const span is safe.
    at::Tensor flat =
        at::from_blob(
            const_cast<float*>(params.data()),  // NOLINT(cppcoreguidelines-pro-type-const-cast)
            {static_cast<int64_t>(params.size())}, options)
            .detach()
            .requires_grad_(true);
    at::Tensor x = at::from_blob(
        const_cast<float*>(batch.images.data()),  // NOLINT
        {static_cast<int64_t>(batch.size), static_cast<int64_t>(batch.image_size)}, options);
    at::Tensor y =
        at::from_blob(const_cast<int64_t*>(batch.labels.data()),  // NOLINT
                      {static_cast<int64_t>(batch.size)}, at::TensorOptions().dtype(at::kLong));
    at::Tensor loss = at::cross_entropy_loss(impl_->Forward(flat, x), y);
    std::vector<at::Tensor> g = torch::autograd::grad({loss}, {flat});
    at::Tensor out = at::from_blob(grad.data(), {static_cast<int64_t>(grad.size())}, options);
    out.copy_(g[0]);
    return loss.item<float>();
  } catch (const std::exception& e) {
    return TorchError("the training step", e);
  }
}

Result<EvalResult> Network::Evaluate(std::span<const float> params, const Dataset& data,
                                     size_t limit) {
  if (params.size() != parameter_count_) {
    return Status::InvalidArgument("Evaluate: parameter size mismatch");
  }
  const size_t n = (limit == 0 || limit > data.size) ? data.size : limit;
  if (n == 0) return Status::InvalidArgument("Evaluate: empty dataset");
  try {
    PinComputeThreads();
    torch::autograd::AutoGradMode no_grad(false);
    const auto options = at::TensorOptions().dtype(at::kFloat);
    at::Tensor flat = at::from_blob(const_cast<float*>(params.data()),  // NOLINT
                                    {static_cast<int64_t>(params.size())}, options);
    const size_t image_size = data.image_size();
    std::vector<float> images(kEvalChunk * image_size);
    std::vector<int64_t> labels(kEvalChunk);
    size_t correct = 0;
    double loss_sum = 0;
    for (size_t begin = 0; begin < n; begin += kEvalChunk) {
      const size_t count = std::min(kEvalChunk, n - begin);
      NormalizePixels({data.pixels.data() + begin * image_size, count * image_size},
                      {images.data(), count * image_size});
      for (size_t i = 0; i < count; ++i) labels[i] = data.labels[begin + i];
      at::Tensor x = at::from_blob(
          images.data(), {static_cast<int64_t>(count), static_cast<int64_t>(image_size)}, options);
      at::Tensor y = at::from_blob(labels.data(), {static_cast<int64_t>(count)},
                                   at::TensorOptions().dtype(at::kLong));
      at::Tensor logits = impl_->Forward(flat, x);
      loss_sum += at::cross_entropy_loss(logits, y, {}, at::Reduction::Sum).item<double>();
      correct += static_cast<size_t>(logits.argmax(1).eq(y).sum().item<int64_t>());
    }
    EvalResult r;
    r.samples = n;
    r.accuracy = static_cast<double>(correct) / static_cast<double>(n);
    r.loss = loss_sum / static_cast<double>(n);
    return r;
  } catch (const std::exception& e) {
    return TorchError("evaluation", e);
  }
}

Status SetComputeThreads(int threads) {
  if (threads < 1) {
    return Status::InvalidArgument("--threads must be at least 1, got " + std::to_string(threads));
  }
  try {
    at::set_num_threads(threads);
    g_compute_threads.store(threads, std::memory_order_relaxed);
    return Status::Ok();
  } catch (const std::exception& e) {
    return TorchError("set_num_threads", e);
  }
}

}  // namespace serene::train
