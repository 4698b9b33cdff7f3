#include "common/temp_key_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/secret_file.h"
#include "common/secure_random.h"

namespace serene {

Result<std::unique_ptr<TempKeyFile>> TempKeyFile::Create(uint32_t key) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/serene-key-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {  // mode 0700
    return Status::IoError("cannot create a private directory for the job key (" + pattern +
                           "): " + std::strerror(errno));
  }
  std::string dir(buf.data());
  std::string path = dir + "/job.key";
  Status s = WriteKeyFile(path, key);
  if (!s.ok()) {
    ::rmdir(dir.c_str());
    return s;
  }
  return std::unique_ptr<TempKeyFile>(new TempKeyFile(std::move(dir), std::move(path), key));
}

Result<std::unique_ptr<TempKeyFile>> TempKeyFile::CreateWithFreshKey() {
  Result<uint32_t> key = DrawJobKey();
  if (!key.ok()) return key.status();
  return Create(*key);
}

TempKeyFile::~TempKeyFile() {
  ::unlink(path_.c_str());
  ::rmdir(dir_.c_str());
}

}  // namespace serene
