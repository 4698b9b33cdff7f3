#include "control/grpc_status.h"

namespace serene::control {

grpc::Status ToGrpcStatus(const Status& s) {
  using C = Status::Code;
  grpc::StatusCode code = grpc::StatusCode::UNKNOWN;
  switch (s.code()) {
    case C::kOk: return grpc::Status::OK;
    case C::kInvalidArgument: code = grpc::StatusCode::INVALID_ARGUMENT; break;
    case C::kNotFound: code = grpc::StatusCode::NOT_FOUND; break;
    case C::kAlreadyExists: code = grpc::StatusCode::ALREADY_EXISTS; break;
    case C::kFailedPrecondition: code = grpc::StatusCode::FAILED_PRECONDITION; break;
    case C::kUnavailable: code = grpc::StatusCode::UNAVAILABLE; break;
    case C::kDeadlineExceeded: code = grpc::StatusCode::DEADLINE_EXCEEDED; break;
    case C::kIoError: code = grpc::StatusCode::INTERNAL; break;
    case C::kInternal: code = grpc::StatusCode::INTERNAL; break;
    case C::kUnauthenticated: code = grpc::StatusCode::UNAUTHENTICATED; break;
    case C::kResourceExhausted: code = grpc::StatusCode::RESOURCE_EXHAUSTED; break;
    case C::kUnimplemented: code = grpc::StatusCode::UNIMPLEMENTED; break;
  }
  return grpc::Status(code, s.message());
}

Status FromGrpcStatus(const grpc::Status& s, const std::string& address) {
  const std::string& msg = s.error_message();
  switch (s.error_code()) {
    case grpc::StatusCode::OK: return Status::Ok();
    case grpc::StatusCode::INVALID_ARGUMENT: return Status::InvalidArgument(msg);
    case grpc::StatusCode::NOT_FOUND: return Status::NotFound(msg);
    case grpc::StatusCode::ALREADY_EXISTS: return Status::AlreadyExists(msg);
    case grpc::StatusCode::FAILED_PRECONDITION: return Status::FailedPrecondition(msg);
    case grpc::StatusCode::UNAUTHENTICATED: return Status::Unauthenticated(msg);
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return Status::ResourceExhausted(msg);
    case grpc::StatusCode::UNIMPLEMENTED: return Status::Unimplemented(msg);
    case grpc::StatusCode::UNAVAILABLE:
      return Status::Unavailable("cannot reach the switch's runtime API at " + address + " (" +
                                 msg + "); is serene-switch running with --control " + address +
                                 "?");
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return Status::Unavailable("the switch's runtime API at " + address +
                                 " did not answer in time (" + msg + ")");
    case grpc::StatusCode::CANCELLED: return Status::Unavailable("call cancelled: " + msg);
    default: return Status::Internal("runtime API at " + address + ": " + msg);
  }
}

}  // namespace serene::control
