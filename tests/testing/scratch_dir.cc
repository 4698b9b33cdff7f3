#include "scratch_dir.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

namespace serene::testing {

namespace fs = std::filesystem;

ScratchDir::ScratchDir(std::string_view prefix)
    : path_(fs::temp_directory_path() /
            (std::string(prefix) + "-" + std::to_string(getpid()))) {
  fs::remove_all(path_);
  fs::create_directories(path_);
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string Slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace serene::testing
