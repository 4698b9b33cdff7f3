// `serene-bench comm`: Serene and Gloo side by side (loadgen/comm_bench.h).
#pragma once

#include <CLI/CLI.hpp>

namespace serene::apps {

// Adds the `comm` subcommand to `app`; after parsing, if it was given,
// RunBenchComm() runs it and returns the exit code.
CLI::App* AddBenchComm(CLI::App* app);
int RunBenchComm();

}  // namespace serene::apps
