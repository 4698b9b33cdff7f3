#include "control/pipeline_target.h"

#include <utility>

namespace serene::control {

PipelineTarget::PipelineTarget(dataplane::Pipeline* pipeline, Sender send, NowFn now)
    : pipeline_(pipeline), send_(std::move(send)), now_(std::move(now)) {}

uint32_t PipelineTarget::Emit(const dataplane::Output& out) {
  // The operation took effect either way; a RELEASE that did not leave is
  // recovered by the rank's CLOCK retransmission.
  if (!out.empty()) (void)send_(out);
  return static_cast<uint32_t>(out.size());
}

std::vector<uint16_t> PipelineTarget::JobIds() const { return pipeline_->JobIds(); }

Result<dataplane::JobTelemetry> PipelineTarget::Telemetry(uint16_t job) const {
  return pipeline_->Telemetry(job);
}

Result<dataplane::JobConfig> PipelineTarget::JobConfig(uint16_t job) const {
  return pipeline_->Config(job);
}

Status PipelineTarget::CreateJob(const dataplane::JobConfig& config) {
  return pipeline_->CreateJob(config);
}

Status PipelineTarget::DeleteJob(uint16_t job) { return pipeline_->DeleteJob(job); }

Result<TargetPolicyChange> PipelineTarget::SetPolicy(uint16_t job,
                                                     const dataplane::BarrierParams& params,
                                                     std::optional<uint32_t> effective_clock) {
  dataplane::Output out = dataplane::Output::ForBatch(1);
  auto change = pipeline_->SetPolicy(job, params, effective_clock, now_(), &out);
  if (!change.ok()) return change.status();
  return TargetPolicyChange{*change, Emit(out)};
}

Result<dataplane::PolicyChange> PipelineTarget::CancelPolicyChange(uint16_t job,
                                                                   std::optional<uint32_t> epoch) {
  dataplane::Output out = dataplane::Output::ForBatch(1);
  auto cancelled = pipeline_->CancelPolicyChange(job, epoch, now_(), &out);
  Emit(out);  // nothing in practice: every waiting rank was judged by the rule in force
  return cancelled;
}

Result<TargetEviction> PipelineTarget::Evict(uint16_t job, uint16_t rank) {
  dataplane::Output out = dataplane::Output::ForBatch(1);
  TargetEviction eviction;
  Status s = pipeline_->Evict(job, rank, now_(), &out, &eviction.was_live);
  if (!s.ok()) return s;
  eviction.released = Emit(out);
  return eviction;
}

Result<uint32_t> PipelineTarget::Finish(uint16_t job) {
  dataplane::Output out = dataplane::Output::ForBatch(1);
  Status s = pipeline_->Finish(job, now_(), &out);
  if (!s.ok()) return s;
  return Emit(out);
}

}  // namespace serene::control
