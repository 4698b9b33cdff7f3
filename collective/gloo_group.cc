#include "collective/gloo_group.h"

#include <gloo/allreduce.h>
#include <gloo/allreduce_bcube.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <exception>
#include <filesystem>
#include <utility>
#include <vector>

namespace serene::collective {
namespace {

// Tags keep the collectives of the functional API apart; calls are sequential.
constexpr uint32_t kTagBroadcast = 1;
constexpr uint32_t kTagAllreduce = 2;
constexpr uint32_t kTagBarrier = 3;

Status GlooError(const std::string& what, const std::exception& e) {
  return Status::Unavailable("gloo " + what + " failed: " + e.what());
}

template <typename T>
std::unique_ptr<gloo::Algorithm> MakeAlgorithm(GlooAlgorithm a,
                                               const std::shared_ptr<gloo::Context>& context,
                                               T* data, int count) {
  std::vector<T*> ptrs = {data};
  switch (a) {
    case GlooAlgorithm::kHalvingDoubling:
      return std::make_unique<gloo::AllreduceHalvingDoubling<T>>(context, ptrs, count);
    case GlooAlgorithm::kBcube:
      return std::make_unique<gloo::AllreduceBcube<T>>(context, ptrs, count);
    case GlooAlgorithm::kRing:
      return std::make_unique<gloo::AllreduceRing<T>>(context, ptrs, count);
    case GlooAlgorithm::kRingChunked:
      return std::make_unique<gloo::AllreduceRingChunked<T>>(context, ptrs, count);
    case GlooAlgorithm::kDefault:
      break;
  }
  return nullptr;
}

}  // namespace

struct GlooGroup::Impl {
  std::chrono::milliseconds timeout;
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<gloo::rendezvous::Context> context;

  // The algorithm object of the last Allreduce, reused for the same buffer.
  struct Cached {
    GlooAlgorithm algorithm = GlooAlgorithm::kDefault;
    const void* data = nullptr;
    size_t count = 0;
    bool is_float = false;
    std::unique_ptr<gloo::Algorithm> impl;
  };
  std::vector<Cached> cache;

  template <typename T>
  Status Allreduce(std::span<T> data, GlooAlgorithm a) {
    constexpr bool kFloat = std::is_same_v<T, float>;
    try {
      if (a == GlooAlgorithm::kDefault) {
        gloo::AllreduceOptions opts(context);
        opts.setOutput(data.data(), data.size());
        opts.setReduceFunction(
            static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<T>));
        opts.setTag(kTagAllreduce);
        opts.setTimeout(timeout);
        gloo::allreduce(opts);
        return Status::Ok();
      }
      if (data.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
        return Status::InvalidArgument("gloo " + std::string(GlooAlgorithmName(a)) +
                                       " allreduce of " + std::to_string(data.size()) +
                                       " elements: at most 2^31-1");
      }
      gloo::Algorithm* algo = nullptr;
      for (Cached& c : cache) {
        if (c.algorithm == a && c.data == data.data() && c.count == data.size() &&
            c.is_float == kFloat) {
          algo = c.impl.get();
        }
      }
      if (algo == nullptr) {
        context->setTimeout(timeout);
        Cached c{a, data.data(), data.size(), kFloat,
                 MakeAlgorithm<T>(a, context, data.data(), static_cast<int>(data.size()))};
        algo = c.impl.get();
        cache.push_back(std::move(c));
      }
      algo->run();
    } catch (const std::exception& e) {
      return GlooError(std::string(GlooAlgorithmName(a)) + " allreduce of " +
                           std::to_string(data.size()) + " elements",
                       e);
    }
    return Status::Ok();
  }

  template <typename T>
  Status Broadcast(std::span<T> data, int root) {
    try {
      gloo::BroadcastOptions opts(context);
      opts.setOutput(data.data(), data.size());
      opts.setRoot(root);
      opts.setTag(kTagBroadcast);
      opts.setTimeout(timeout);
      gloo::broadcast(opts);
    } catch (const std::exception& e) {
      return GlooError("broadcast of " + std::to_string(data.size()) + " elements", e);
    }
    return Status::Ok();
  }
};

GlooGroup::GlooGroup(int rank, int world_size, std::unique_ptr<Impl> impl)
    : rank_(rank), world_size_(world_size), impl_(std::move(impl)) {}

GlooGroup::~GlooGroup() = default;

Result<std::unique_ptr<GlooGroup>> GlooGroup::Connect(const GlooGroupOptions& options) {
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size) {
    return Status::InvalidArgument("gloo: rank " + std::to_string(options.rank) +
                                   " is not in [0, world size " +
                                   std::to_string(options.world_size) + ")");
  }
  if (options.rendezvous_dir.empty()) {
    return Status::InvalidArgument("gloo: a rendezvous directory is required");
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
  return std::unique_ptr<GlooGroup>(
      new GlooGroup(options.rank, options.world_size, std::move(impl)));
}

Status GlooGroup::Allreduce(std::span<float> data, GlooAlgorithm a) {
  return impl_->Allreduce(data, a);
}
Status GlooGroup::Allreduce(std::span<int32_t> data, GlooAlgorithm a) {
  return impl_->Allreduce(data, a);
}
Status GlooGroup::Broadcast(std::span<float> data, int root) {
  return impl_->Broadcast(data, root);
}
Status GlooGroup::Broadcast(std::span<int64_t> data, int root) {
  return impl_->Broadcast(data, root);
}

Status GlooGroup::Barrier() {
  try {
    gloo::BarrierOptions opts(impl_->context);
    opts.setTag(kTagBarrier);
    opts.setTimeout(impl_->timeout);
    gloo::barrier(opts);
  } catch (const std::exception& e) {
    return GlooError("barrier", e);
  }
  return Status::Ok();
}

}  // namespace serene::collective
