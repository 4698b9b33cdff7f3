// serene-ctl: the operator's CLI over a switch's runtime API (jobs, policies,
// telemetry, a live view, policy scripts). Parses the command line and runs
// the chosen command; everything else lives in ctl/ (docs/serene-ctl.md).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "apps/cli_parse.h"
#include "ctl/cli.h"
#include "ctl/interrupt.h"

int main(int argc, char** argv) {
  CLI::App app{
      "serene-ctl: manage a running serene-switch through its runtime API (jobs, policies, "
      "telemetry, policy scripts).",
      "serene-ctl"};
  serene::ctl::CommandLine command_line(&app);
  if (auto code = serene::apps::ParseCommandLine(app, argc, argv)) return *code;

  // top and control stop cleanly on SIGINT/SIGTERM: block the signals before
  // the runtime API client starts its threads, and wait for them on one.
  serene::ctl::Interrupt interrupt;
  std::unique_ptr<serene::ctl::SignalThread> signals;
  if (command_line.Interruptible()) {
    signals = std::make_unique<serene::ctl::SignalThread>(&interrupt);
  }
  const bool terminal = isatty(STDOUT_FILENO) == 1;
  const int code = command_line.Run({std::cout, std::cerr}, &interrupt, terminal);
  std::cout.flush();
  return code;
}
