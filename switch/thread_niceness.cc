#include "switch/thread_niceness.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>
#include <thread>

namespace serene::switchd {

Status SetThreadNiceness(int nice) {
  if (nice < kMinNice || nice > kMaxNice) {
    return Status::InvalidArgument("niceness " + std::to_string(nice) + ": expected " +
                                   std::to_string(kMinNice) + ".." + std::to_string(kMaxNice));
  }
  // With PRIO_PROCESS and a thread id, Linux sets that one thread.
  if (setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), nice) != 0) {
    const int err = errno;
    if (err == EACCES || err == EPERM) {
      return Status::FailedPrecondition(
          "cannot run the switch's loop threads at niceness " + std::to_string(nice) + " (" +
          std::strerror(err) +
          "): a niceness below the current one needs root, CAP_SYS_NICE or a raised "
          "RLIMIT_NICE; leave nice unset or give one at or above the current one");
    }
    return Status::IoError("setpriority(" + std::to_string(nice) + "): " + std::strerror(err));
  }
  return Status::Ok();
}

Status SetThreadBatchScheduling() {
  const sched_param param{};  // priority 0: the only one SCHED_BATCH takes
  if (const int err = pthread_setschedparam(pthread_self(), SCHED_BATCH, &param); err != 0) {
    return Status::IoError(std::string("cannot put a loop thread under SCHED_BATCH: ") +
                           std::strerror(err));
  }
  return Status::Ok();
}

Status CheckThreadNiceness(int nice) {
  Status result;
  try {
    std::thread probe([&] { result = SetThreadNiceness(nice); });
    probe.join();
  } catch (const std::system_error& e) {
    return Status::Internal(std::string("cannot start a thread: ") + e.what());
  }
  return result;
}

}  // namespace serene::switchd
