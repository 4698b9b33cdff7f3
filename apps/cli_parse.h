// Command-line parsing with the exit codes every serene-* binary shares:
// --help / --version exit 0, any usage error exits 2 (docs/errors.md).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>

namespace serene::apps {

// Parses; returns nullopt to go on, or the code main() must return.
inline std::optional<int> ParseCommandLine(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return std::nullopt;
}

}  // namespace serene::apps
