#include "train/gloo_backend.h"

#include <gloo/allreduce.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <utility>
#include <vector>

namespace serene::train {
namespace {

// Tags keep the collectives of one round apart; rounds are sequential.
constexpr uint32_t kTagSize = 1;
constexpr uint32_t kTagModel = 2;
constexpr uint32_t kTagUpdate = 3;

Status GlooError(const std::string& what, const std::exception& e) {
  return Status::Unavailable("gloo " + what + " failed: " + e.what());
}

}  // namespace

struct GlooBackend::Impl {
  std::chrono::milliseconds timeout;
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<gloo::rendezvous::Context> context;
  std::vector<float> buffer;  // update, then the stop flag
};

GlooBackend::GlooBackend(int rank, int world_size, std::unique_ptr<Impl> impl)
    : rank_(rank), world_size_(world_size), impl_(std::move(impl)) {}

GlooBackend::~GlooBackend() = default;

Result<std::unique_ptr<GlooBackend>> GlooBackend::Connect(const GlooOptions& options) {
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size) {
    return Status::InvalidArgument("gloo: rank " + std::to_string(options.rank) +
                                   " is not in [0, world size " +
                                   std::to_string(options.world_size) + ")");
  }
  if (options.rendezvous_dir.empty()) {
    return Status::InvalidArgument("gloo: a rendezvous directory is required (--rendezvous)");
  }
  std::error_code ec;
  std::filesystem::create_directories(options.rendezvous_dir, ec);
  if (ec) {
    return Status::IoError("gloo: cannot create rendezvous directory " + options.rendezvous_dir +
                           ": " + ec.message());
  }
  auto impl = std::make_unique<Impl>();
  impl->timeout = options.timeout;
  try {
    gloo::transport::tcp::attr attr;
    if (options.iface.empty()) {
      attr.hostname = options.hostname;
    } else {
      attr.iface = options.iface;
    }
    impl->device = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore file_store(options.rendezvous_dir);
    gloo::rendezvous::PrefixStore store(options.run_id, file_store);
    impl->context = std::make_shared<gloo::rendezvous::Context>(options.rank, options.world_size);
    impl->context->setTimeout(options.timeout);
    impl->context->connectFullMesh(store, impl->device);
  } catch (const std::exception& e) {
    return GlooError("rendezvous of rank " + std::to_string(options.rank) + "/" +
                         std::to_string(options.world_size) + " in " + options.rendezvous_dir +
                         " (run id '" + options.run_id + "')",
                     e);
  }
  return std::unique_ptr<GlooBackend>(
      new GlooBackend(options.rank, options.world_size, std::move(impl)));
}

Status GlooBackend::Initialize(std::span<float> model) {
  try {
    // Fail fast, with a clear message, if the ranks disagree on the model.
    int64_t size = static_cast<int64_t>(model.size());
    gloo::BroadcastOptions size_opts(impl_->context);
    size_opts.setOutput(&size, 1);
    size_opts.setRoot(0);
    size_opts.setTag(kTagSize);
    size_opts.setTimeout(impl_->timeout);
    gloo::broadcast(size_opts);
    if (size != static_cast<int64_t>(model.size())) {
      return Status::FailedPrecondition("gloo: rank 0's model has " + std::to_string(size) +
                                        " parameters, rank " + std::to_string(rank_) + "'s has " +
                                        std::to_string(model.size()) +
                                        " (do all ranks use the same --model?)");
    }
    gloo::BroadcastOptions opts(impl_->context);
    opts.setOutput(model.data(), model.size());
    opts.setRoot(0);
    opts.setTag(kTagModel);
    opts.setTimeout(impl_->timeout);
    gloo::broadcast(opts);
  } catch (const std::exception& e) {
    return GlooError("broadcast of the initial model", e);
  }
  impl_->buffer.assign(model.size() + 1, 0.0f);
  return Status::Ok();
}

Status GlooBackend::Pull(std::span<float> /*model*/, SyncTiming* /*timing*/) {
  return Status::Ok();  // the local model is current after every Push
}

Status GlooBackend::Allreduce(const char* what) {
  try {
    gloo::AllreduceOptions opts(impl_->context);
    opts.setOutput(impl_->buffer.data(), impl_->buffer.size());
    opts.setReduceFunction(
        static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
    opts.setTag(kTagUpdate);
    opts.setTimeout(impl_->timeout);
    gloo::allreduce(opts);
  } catch (const std::exception& e) {
    return GlooError(what, e);
  }
  return Status::Ok();
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

Status GlooBackend::Finish() {
  if (finished_) return Status::Ok();
  if (impl_->buffer.empty()) return Status::FailedPrecondition("gloo: Finish before Initialize");
  std::fill(impl_->buffer.begin(), impl_->buffer.end(), 0.0f);
  impl_->buffer.back() = 1.0f;
  finished_ = true;
  return Allreduce("allreduce of the stop flag");
}

}  // namespace serene::train
