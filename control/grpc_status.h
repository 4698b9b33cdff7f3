// Status <-> grpc::Status, and the token's metadata, shared by the runtime
// API's server and client so both sides agree on codes and spelling.
#pragma once

#include <grpcpp/support/status.h>

#include <string>

#include "common/status.h"

namespace serene::control {

// Metadata carrying the token: "authorization: Bearer <token>".
inline constexpr const char* kTokenMetadataKey = "authorization";
inline constexpr const char* kTokenPrefix = "Bearer ";

grpc::Status ToGrpcStatus(const Status& s);

// The server's message with the code mapped. Transport failures (UNAVAILABLE,
// DEADLINE_EXCEEDED) name `address` and what to check.
Status FromGrpcStatus(const grpc::Status& s, const std::string& address);

}  // namespace serene::control
