// ChildProcess: a child starts with SIGPIPE's default action even when the
// parent ignores it (the daemons do: common/sigpipe.h), since an ignored
// signal would otherwise stay ignored across exec.
#include "loadgen/child_process.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <cstdint>
#include <string>

namespace serene::loadgen {
namespace {

// The SigIgn mask of /proc/self/status as the child `grep` sees it.
uint64_t ChildIgnoredSignals() {
  auto [code, out] = RunToExit("/bin/grep", {"^SigIgn:", "/proc/self/status"});
  EXPECT_EQ(code, 0) << out;
  return std::stoull(out.substr(out.find(':') + 1), nullptr, 16);
}

constexpr uint64_t kSigpipeBit = uint64_t{1} << (SIGPIPE - 1);

TEST(ChildProcessTest, AChildOfAParentThatIgnoresSigpipeGetsTheDefaultAction) {
  struct sigaction old {};
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGPIPE, &ignore, &old), 0);
  const uint64_t ignored = ChildIgnoredSignals();
  sigaction(SIGPIPE, &old, nullptr);
  EXPECT_EQ(ignored & kSigpipeBit, 0u) << "SigIgn " << std::hex << ignored;
}

// The check itself can see an ignored SIGPIPE: a shell that ignores it and
// execs grep passes it on.
TEST(ChildProcessTest, TheCheckSeesAnIgnoredSigpipe) {
  auto [code, out] =
      RunToExit("/bin/sh", {"-c", "trap '' PIPE; exec grep '^SigIgn:' /proc/self/status"});
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(std::stoull(out.substr(out.find(':') + 1), nullptr, 16) & kSigpipeBit, 0u) << out;
}

}  // namespace
}  // namespace serene::loadgen
