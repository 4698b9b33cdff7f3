// CommandLine: serene-ctl's command line (CLI11) — the global flags
// (--control, --token-file, --timeout, with SERENE_CONTROL and
// SERENE_TOKEN_FILE as defaults), one CLI11 subcommand per command of
// ctl/commands.h, and the dispatch to it once parsed. docs/serene-ctl.md
// describes every flag.
//
// Flags CLI11 can check (numbers, ranges, durations, --param syntax) are
// checked while parsing: a bad one is a usage error (exit 2) before anything
// is sent. Thread-compatible.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "control/runtime_client.h"
#include "ctl/exit_code.h"
#include "ctl/interrupt.h"

namespace serene::ctl {

class CommandLine {
 public:
  // Adds the flags and subcommands to `app`, which must outlive this object.
  explicit CommandLine(CLI::App* app);
  CommandLine(const CommandLine&) = delete;
  CommandLine& operator=(const CommandLine&) = delete;

  // REQUIRES: `app` parsed successfully.
  // True if the chosen command runs until stopped (top, control): main then
  // turns SIGINT/SIGTERM into `interrupt` (SignalThread) before Run().
  bool Interruptible() const;

  // REQUIRES: `app` parsed successfully.
  // Reads the token file, creates the runtime API client and runs the chosen
  // command; returns its exit code. `ansi`: stdout is a terminal (top
  // redraws in place).
  int Run(Io io, Interrupt* interrupt, bool ansi);

 private:
  struct Command {
    CLI::App* app;
    bool interruptible;
    std::function<int(control::RuntimeClient&, Io, Interrupt*, bool ansi)> run;
  };
  // The subcommand `app` runs `run` once chosen.
  void Add(CLI::App* app, bool interruptible,
           std::function<int(control::RuntimeClient&, Io, Interrupt*, bool ansi)> run);
  const Command* Chosen() const;

  void AddJobCommands(CLI::App* app);
  void AddPolicyCommands(CLI::App* app);
  void AddTelemetryCommands(CLI::App* app);
  void AddControlCommand(CLI::App* app);

  std::string control_address_;
  std::string token_file_;
  std::string timeout_ = "5s";
  std::vector<Command> commands_;
};

}  // namespace serene::ctl
