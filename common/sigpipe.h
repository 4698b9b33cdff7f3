// SIGPIPE for long-running processes. A write to a pipe or socket whose
// reader is gone raises SIGPIPE, whose default action ends the process: a
// switch logging into `| tee` that was killed, or printing its counters to a
// closed pipe on SIGTERM, would die of it. The daemons ignore it, so such a
// write fails with EPIPE and the process goes on; an ignored signal stays
// ignored across exec, so a child gets the default back before it execs.
#pragma once

#include <signal.h>

namespace serene {

// At the start of a daemon's or a launcher's main, before any thread starts.
inline void IgnoreSigpipe() { ::signal(SIGPIPE, SIG_IGN); }

// In a forked child, before exec (async-signal-safe).
inline void DefaultSigpipeInChild() { ::signal(SIGPIPE, SIG_DFL); }

}  // namespace serene
