#include "loadgen/switch_launch.h"

#include <filesystem>

namespace serene::loadgen {

std::string OwnBinaryDir() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : self.parent_path().string();
}

std::optional<std::string> WaitForListening(ChildProcess& sw, std::chrono::milliseconds guard) {
  static const std::string kPrefix = "listening on ";
  if (!sw.started()) return std::nullopt;
  auto line = sw.WaitForOutput(kPrefix, guard);
  if (!line) return std::nullopt;
  const size_t start = kPrefix.size();
  return line->substr(start, line->find_first_of(" \n", start) - start);
}

}  // namespace serene::loadgen
