#include "common/secret_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/parse.h"

namespace serene {
namespace {

std::string OctalMode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

std::string Trim(std::string s) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

}  // namespace

Result<std::string> ReadPrivateFile(const std::string& path, std::string_view what) {
  const std::string name = std::string(what) + " '" + path + "'";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::NotFound("cannot read " + name + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::InvalidArgument(name + " is not a regular file");
  }
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    ::close(fd);
    return Status::InvalidArgument(name + " has mode " + OctalMode(st.st_mode) +
                                   ": group or others can read or write it, so it is no "
                                   "secret; make it private to its owner: chmod 600 " +
                                   path);
  }
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return Status::NotFound("cannot read " + name + ": " + std::strerror(err));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  text = Trim(std::move(text));
  if (text.empty()) return Status::InvalidArgument(name + " is empty");
  return text;
}

Result<std::string> ReadTokenFile(const std::string& path) {
  Result<std::string> token = ReadPrivateFile(path, "token file");
  if (!token.ok()) {
    if (token.status().message().ends_with(" is empty")) {
      return Status::InvalidArgument(token.status().message() +
                                     "; put a secret in it, e.g. `head -c 24 /dev/urandom | "
                                     "base64 > " +
                                     path + " && chmod 600 " + path + "`");
    }
    return token;
  }
  if (token->size() < kMinTokenBytes) {
    return Status::InvalidArgument(
        "token file '" + path + "' holds " + std::to_string(token->size()) +
        " bytes; a token needs at least " + std::to_string(kMinTokenBytes) +
        " (surrounding whitespace aside): make a new one, e.g. `head -c 24 /dev/urandom | "
        "base64 > " +
        path + " && chmod 600 " + path + "`");
  }
  return token;
}

Result<uint32_t> ReadKeyFile(const std::string& path) {
  Result<std::string> text = ReadPrivateFile(path, "key file");
  if (!text.ok()) return text.status();
  uint32_t key = 0;
  if (!ParseUint32(*text, &key) || key == 0) {
    return Status::InvalidArgument("key file '" + path +
                                   "' does not hold a non-zero 32-bit key (decimal or 0x-hex); "
                                   "make one: `printf '0x%08x\\n' $(od -An -N4 -tu4 /dev/urandom)"
                                   " > " +
                                   path + " && chmod 600 " + path + "`");
  }
  return key;
}

Status WriteKeyFile(const std::string& path, uint32_t key) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Status::IoError("cannot create key file '" + path + "': " + std::strerror(errno));
  }
  char text[16];
  const int n = std::snprintf(text, sizeof text, "%#010x\n", key);
  const bool ok = ::write(fd, text, static_cast<size_t>(n)) == n;
  const int err = errno;
  ::close(fd);
  if (!ok) return Status::IoError("cannot write key file '" + path + "': " + std::strerror(err));
  return Status::Ok();
}

}  // namespace serene
