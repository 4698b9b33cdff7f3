// ScratchDir: a fresh directory under the system's temp directory for one
// test process, removed with everything in it when the object goes away.
// Slurp: a whole file as a string ("" if it cannot be read).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace serene::testing {

class ScratchDir {
 public:
  // <tmp>/<prefix>-<pid>, emptied if it exists.
  explicit ScratchDir(std::string_view prefix);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

std::string Slurp(const std::filesystem::path& path);

}  // namespace serene::testing
