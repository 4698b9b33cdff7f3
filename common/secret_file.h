// Secrets read from files: the runtime API's and /metrics' tokens, and job
// keys (docs/security.md, "Secrets").
//
// A secret file must be private to its owner: a file that group or others
// may read (or write) is refused, whatever it holds, with its mode and the
// chmod that fixes it in the error. A token must hold at least
// kMinTokenBytes bytes once surrounding whitespace is trimmed; a key file
// holds one non-zero 32-bit key, decimal or 0x-hex. Errors name the file and
// say what to do.
//
// Pure functions over the file system; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace serene {

// Fewer bytes than this is a guessable token (16 bytes of base64 text carry
// 96 bits).
inline constexpr size_t kMinTokenBytes = 16;

// The content of the private file `path`, without surrounding whitespace.
// `what` names the secret in errors ("token file", "key file").
// Errors: NotFound (cannot open or read), PermissionDenied-like
// InvalidArgument (not a regular file; mode grants group or others any
// access), InvalidArgument (empty).
Result<std::string> ReadPrivateFile(const std::string& path, std::string_view what);

// A token: ReadPrivateFile and at least kMinTokenBytes bytes.
Result<std::string> ReadTokenFile(const std::string& path);

// A job key: ReadPrivateFile holding a non-zero 32-bit decimal or 0x-hex number.
Result<uint32_t> ReadKeyFile(const std::string& path);

// Writes `key` as 0x-hex into a new file `path` that only its owner can read
// (created 0600; fails if the file exists). For launchers that hand a key to
// the processes they start.
Status WriteKeyFile(const std::string& path, uint32_t key);

}  // namespace serene
