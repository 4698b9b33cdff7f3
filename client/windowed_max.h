// WindowedMax: the largest duration sampled in the current and the previous
// second (a second starts at the first sample after the last one ended), so
// a peak is remembered for one to two seconds and then forgotten.
#pragma once

#include <algorithm>
#include <chrono>

namespace serene::client {

class WindowedMax {
 public:
  using Clock = std::chrono::steady_clock;

  void Add(Clock::duration sample, Clock::time_point now) {
    if (now - start_ > std::chrono::seconds(1)) {
      previous_ = current_;
      current_ = sample;
      start_ = now;
    } else {
      current_ = std::max(current_, sample);
    }
  }
  Clock::duration Get() const { return std::max(current_, previous_); }

 private:
  Clock::duration current_{0};
  Clock::duration previous_{0};
  Clock::time_point start_{};
};

}  // namespace serene::client
