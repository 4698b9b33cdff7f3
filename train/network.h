// Network: forward, loss, backward and evaluation of a model held as a flat
// float vector (model_layout.h), computed with libtorch.
//
// This is the only place the trainer touches torch; the header is torch-free
// (pimpl, spans) so the rest of the trainer compiles fast and never sees a
// torch exception: every torch error comes back as Status::Internal with the
// message.
//
// Each call wraps the caller's parameter span in a tensor without copying and
// slices per-parameter views out of it, so the gradient with respect to the
// flat vector comes out of autograd directly in layout order.
//
// Thread-safety: a Network is not thread-safe; use one per thread. Several
// Networks may run concurrently in separate threads. SetComputeThreads is
// process-wide: every thread that computes (Gradient, Evaluate) uses that
// many threads, whatever OMP_NUM_THREADS says, so the same step computed on
// two threads of one process, or in two processes, gives the same bits.
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "common/status.h"
#include "train/batcher.h"
#include "train/fashion_mnist.h"
#include "train/model_layout.h"

namespace serene::train {

struct EvalResult {
  double accuracy = 0;  // fraction of correct top-1 predictions
  double loss = 0;      // mean cross-entropy
  size_t samples = 0;
};

class Network {
 public:
  static Result<std::unique_ptr<Network>> Create(ModelKind kind);
  ~Network();
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;

  ModelKind kind() const { return kind_; }
  size_t parameter_count() const { return parameter_count_; }

  // One SGD step's worth of work: forward on `batch`, mean cross-entropy,
  // backward. Writes d(loss)/d(params) to `grad` and returns the loss.
  // REQUIRES: params.size() == grad.size() == parameter_count().
  Result<float> Gradient(std::span<const float> params, const Batch& batch, std::span<float> grad);

  // Accuracy and mean loss of `params` on the first `limit` examples of
  // `data` (all if limit is 0 or larger than the set), in chunks, without
  // autograd. REQUIRES: params.size() == parameter_count().
  Result<EvalResult> Evaluate(std::span<const float> params, const Dataset& data, size_t limit);

 private:
  struct Impl;
  Network(ModelKind kind, std::unique_ptr<Impl> impl);

  ModelKind kind_;
  size_t parameter_count_;
  std::unique_ptr<Impl> impl_;
};

// Sets the intra-op thread count (libtorch's and OpenBLAS's) every thread
// computes with from its next Gradient or Evaluate on; 1 until called
// (several ranks usually share few cores).
// Errors: InvalidArgument if threads < 1, Internal if torch refuses.
Status SetComputeThreads(int threads);

}  // namespace serene::train
