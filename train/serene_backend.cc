#include "train/serene_backend.h"

#include <chrono>
#include <string>

namespace serene::train {

Result<std::unique_ptr<SereneBackend>> SereneBackend::Connect(const ClientOptions& options,
                                                              size_t model_elements) {
  auto client = Client::Connect(options);
  if (!client.ok()) return client.status();
  auto info = (*client)->Join();
  if (!info.ok()) return info.status();
  if (info->elements != model_elements) {
    return Status::InvalidArgument(
        "job " + std::to_string(options.job) + " on switch " + options.switch_address + " has " +
        std::to_string(info->elements) + " elements but the model has " +
        std::to_string(model_elements) + "; create the job with elements=" +
        std::to_string(model_elements));
  }
  return std::unique_ptr<SereneBackend>(new SereneBackend(std::move(*client), options.rank));
}

Status SereneBackend::Initialize(std::span<float> model) { return client_->Initialize(model); }

Status SereneBackend::Pull(std::span<float> model, SyncTiming* timing) {
  Status s = client_->Pull(model);
  if (timing != nullptr) {
    timing->barrier_wait_s = 0;
    timing->data_arrival = client_->data_arrival();
  }
  return s;
}

Status SereneBackend::Push(std::span<const float> update, std::span<float> /*model*/,
                           SyncTiming* timing) {
  Status s = client_->Push(update);
  if (!s.ok()) return s;
  auto released = client_->Clock();
  if (!released.ok()) return released.status();
  last_release_ = *released;
  if (timing != nullptr) {
    timing->barrier_wait_s = std::chrono::duration<double>(released->waited).count();
  }
  return Status::Ok();
}

Status SereneBackend::Finish() {
  if (left_) return Status::Ok();
  left_ = true;
  return client_->Leave(/*finish_job=*/true);
}

Status SereneBackend::Close() {
  if (left_) return Status::Ok();
  left_ = true;
  return client_->Leave(/*finish_job=*/false);
}

}  // namespace serene::train
