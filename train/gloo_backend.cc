#include "train/gloo_backend.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace serene::train {
namespace {

// GlooGroup names the collective by its size ("gloo broadcast of 1 elements
// failed: WHY"); the backend's messages name what it was for ("gloo
// broadcast of the initial model failed: WHY").
Status Named(Status s, const std::string& what) {
  if (s.ok() || s.code() != Status::Code::kUnavailable) return s;
  const std::string& message = s.message();
  constexpr std::string_view kFailed = " failed: ";
  const size_t at = message.find(kFailed);
  const std::string why = at == std::string::npos ? message : message.substr(at + kFailed.size());
  return Status::Unavailable("gloo " + what + " failed: " + why);
}

}  // namespace

Status CheckGlooAlgorithm(collective::GlooAlgorithm algorithm) {
  constexpr std::string_view kTaken =
      "; the training baseline takes default, halving-doubling or ring-chunked";
  const std::string name(collective::GlooAlgorithmName(algorithm));
  switch (algorithm) {
    case collective::GlooAlgorithm::kRing:
      return Status::InvalidArgument(
          "gloo: the " + name +
          " allreduce does not keep the ranks bit-identical (every rank adds the others' "
          "updates in its own order, so their models drift apart by rounding)" +
          std::string(kTaken));
    case collective::GlooAlgorithm::kBcube:
      return Status::InvalidArgument("gloo: the " + name +
                                     " allreduce is not reliable with this Gloo (wrong sums for 3 "
                                     "and 5 ranks, ranks that differ for 4)" +
                                     std::string(kTaken));
    case collective::GlooAlgorithm::kDefault:
    case collective::GlooAlgorithm::kHalvingDoubling:
    case collective::GlooAlgorithm::kRingChunked:
      break;
  }
  return Status::Ok();
}

struct GlooBackend::Impl {
  collective::GlooAlgorithm algorithm = collective::GlooAlgorithm::kDefault;
  std::unique_ptr<collective::GlooGroup> group;
  // The update, then the stop flag. Allocated once by Initialize and never
  // resized: the group reuses its algorithm object for the same buffer.
  std::vector<float> buffer;
};

GlooBackend::GlooBackend(int rank, int world_size, std::unique_ptr<Impl> impl)
    : rank_(rank), world_size_(world_size), impl_(std::move(impl)) {}

GlooBackend::~GlooBackend() = default;

Result<std::unique_ptr<GlooBackend>> GlooBackend::Connect(const GlooOptions& options) {
  if (options.world_size >= 1 && options.rank >= 0 && options.rank < options.world_size &&
      options.rendezvous_dir.empty()) {
    return Status::InvalidArgument("gloo: a rendezvous directory is required (--rendezvous)");
  }
  if (Status s = CheckGlooAlgorithm(options.algorithm); !s.ok()) return s;
  auto group = collective::GlooGroup::Connect(options);
  if (!group.ok()) return group.status();
  auto impl = std::make_unique<Impl>();
  impl->algorithm = options.algorithm;
  impl->group = std::move(*group);
  return std::unique_ptr<GlooBackend>(
      new GlooBackend(options.rank, options.world_size, std::move(impl)));
}

Status GlooBackend::Initialize(std::span<float> model) {
  // Fail fast, with a clear message, if the ranks disagree on the model.
  int64_t size = static_cast<int64_t>(model.size());
  const std::string what = "broadcast of the initial model";
  if (Status s = Named(impl_->group->Broadcast(std::span<int64_t>(&size, 1), 0), what); !s.ok()) {
    return s;
  }
  if (size != static_cast<int64_t>(model.size())) {
    return Status::FailedPrecondition("gloo: rank 0's model has " + std::to_string(size) +
                                      " parameters, rank " + std::to_string(rank_) + "'s has " +
                                      std::to_string(model.size()) +
                                      " (do all ranks use the same --model?)");
  }
  if (Status s = Named(impl_->group->Broadcast(model, 0), what); !s.ok()) return s;
  impl_->buffer.assign(model.size() + 1, 0.0f);
  return Status::Ok();
}

Status GlooBackend::Pull(std::span<float> /*model*/, SyncTiming* /*timing*/) {
  return Status::Ok();  // the local model is current after every Push
}

Status GlooBackend::Allreduce(const char* what) {
  return Named(impl_->group->Allreduce(impl_->buffer, impl_->algorithm), what);
}

Status GlooBackend::Push(std::span<const float> update, std::span<float> model,
                         SyncTiming* timing) {
  if (finished_) return Status::FailedPrecondition("gloo: Push after the job finished");
  const size_t n = impl_->buffer.size() - 1;
  if (update.size() != n || model.size() != n) {
    return Status::InvalidArgument("gloo: Push of " + std::to_string(update.size()) +
                                   " floats, the model has " + std::to_string(n) +
                                   " (Initialize first)");
  }
  std::copy(update.begin(), update.end(), impl_->buffer.begin());
  impl_->buffer[n] = 0.0f;
  const auto start = std::chrono::steady_clock::now();
  Status s = Allreduce("allreduce of the update");
  if (timing != nullptr) {
    timing->barrier_wait_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  if (!s.ok()) return s;
  if (impl_->buffer[n] != 0.0f) {
    finished_ = true;  // another rank ended the job in this round: drop the sum
    return Status::Ok();
  }
  for (size_t i = 0; i < n; ++i) model[i] += impl_->buffer[i];
  return Status::Ok();
}

Status GlooBackend::Close() {
  if (impl_->buffer.empty()) return Status::Ok();  // never initialized: no collective to end
  return Named(impl_->group->Barrier(), "barrier before closing");
}

Status GlooBackend::Finish() {
  if (finished_) return Status::Ok();
  if (impl_->buffer.empty()) return Status::FailedPrecondition("gloo: Finish before Initialize");
  std::fill(impl_->buffer.begin(), impl_->buffer.end(), 0.0f);
  impl_->buffer.back() = 1.0f;
  finished_ = true;
  return Allreduce("allreduce of the stop flag");
}

}  // namespace serene::train
