#include "loadgen/switch_launch.h"

#include <filesystem>

#include "net/udp_socket.h"

namespace serene::loadgen {

std::string OwnBinaryDir() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : self.parent_path().string();
}

namespace {

// The word after `prefix` in the first line of the output holding it.
std::optional<std::string> WaitForWordAfter(ChildProcess& sw, const std::string& prefix,
                                            std::chrono::milliseconds guard) {
  if (!sw.started()) return std::nullopt;
  auto line = sw.WaitForOutput(prefix, guard);
  if (!line) return std::nullopt;
  const size_t start = prefix.size();
  return line->substr(start, line->find_first_of(" \n", start) - start);
}

}  // namespace

std::optional<std::string> WaitForListening(ChildProcess& sw, std::chrono::milliseconds guard) {
  return WaitForWordAfter(sw, "listening on ", guard);
}

std::optional<std::string> WaitForControl(ChildProcess& sw, std::chrono::milliseconds guard) {
  return WaitForWordAfter(sw, "runtime API at ", guard);
}

Result<uint16_t> FreeUdpPort() {
  net::UdpSocketOptions so;
  so.address = "0.0.0.0";
  so.learn_destination = false;
  Result<net::UdpSocket> sock = net::UdpSocket::Open(so);
  if (!sock.ok()) return sock.status();
  return sock->local().port;
}

}  // namespace serene::loadgen
