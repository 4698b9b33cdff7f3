// TempKeyFile: a job key in a private file for the processes a launcher
// starts (serene-experiment, serene-bench's own switch): a fresh directory
// under $TMPDIR (default /tmp) that only its owner can enter (0700), holding
// `job.key` (0600, written by WriteKeyFile). The launcher passes its path
// (key_file=PATH, --key-file PATH), never the key itself, so the key does not
// appear on any command line. Both are removed when the object goes.
//
// Thread-compatible.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"

namespace serene {

class TempKeyFile {
 public:
  static Result<std::unique_ptr<TempKeyFile>> Create(uint32_t key);
  // The same with a key drawn by DrawJobKey() (common/secure_random.h).
  static Result<std::unique_ptr<TempKeyFile>> CreateWithFreshKey();
  ~TempKeyFile();  // removes the file and its directory
  TempKeyFile(const TempKeyFile&) = delete;
  TempKeyFile& operator=(const TempKeyFile&) = delete;

  const std::string& path() const { return path_; }
  uint32_t key() const { return key_; }

 private:
  TempKeyFile(std::string dir, std::string path, uint32_t key)
      : dir_(std::move(dir)), path_(std::move(path)), key_(key) {}

  std::string dir_;
  std::string path_;
  uint32_t key_;
};

}  // namespace serene
