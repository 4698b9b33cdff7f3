// The update rule with momentum, shared by serene-train's trainer and the
// simulator's ranks (sim/torch_work.h) so both push the same bits.
//
// Each rank keeps its own velocity v of its own gradients, v = μ·v + g, and
// pushes scale·v (scale = −lr/N). Under SYNC every rank adds its scaled
// velocity into the same model, and since the rule is linear the sum of the
// ranks' velocities is the velocity of the summed gradient: the job trains
// as one momentum SGD on the global batch, whatever N. Under SSP and ASYNC
// a rank's velocity carries its own stale gradients forward, which is why
// momentum makes staleness costlier (docs/results.md).
#pragma once

#include <cstddef>
#include <span>

namespace serene::train {

// REQUIRES: grad, velocity and update have the same size.
inline void ApplyMomentum(float momentum, std::span<const float> grad, std::span<float> velocity,
                          float scale, std::span<float> update) {
  for (size_t i = 0; i < grad.size(); ++i) {
    velocity[i] = momentum * velocity[i] + grad[i];
    update[i] = scale * velocity[i];
  }
}

}  // namespace serene::train
