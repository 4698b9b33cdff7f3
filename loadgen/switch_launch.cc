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

std::string LoopbackGroup(uint16_t job, uint16_t port) {
  return "239.83." + std::to_string(job >> 8) + "." + std::to_string(job & 0xFF) + ":" +
         std::to_string(port);
}

Result<std::string> LoopbackGroup(uint16_t job) {
  Result<uint16_t> port = FreeUdpPort();
  if (!port.ok()) return port.status();
  return LoopbackGroup(job, *port);
}

Result<LoopbackSwitch> StartLoopbackSwitch(uint16_t job, const std::string& job_spec, bool group,
                                           const std::vector<std::string>& extra_args) {
  std::string spec = job_spec;
  if (group) {
    Result<std::string> g = LoopbackGroup(job);
    if (!g.ok()) {
      return Status::Unavailable("no free UDP port for the reply group: " + g.status().message());
    }
    spec += ",group=" + *g;
  }
  std::vector<std::string> args = {"--bind", "127.0.0.1", "--port", "0", "--control", "off",
                                   "--job",  spec};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  const std::string binary = OwnBinaryDir() + "/serene-switch";
  LoopbackSwitch sw;
  sw.process = std::make_unique<ChildProcess>(binary, args);
  auto listening = WaitForListening(*sw.process);
  if (!listening) {
    return Status::Unavailable("could not start " + binary + ":\n" + sw.process->output());
  }
  sw.address = *listening;
  return sw;
}

}  // namespace serene::loadgen
