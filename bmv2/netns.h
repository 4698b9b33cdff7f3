// Network namespaces for simple_switch. BMv2's Thrift server listens on every
// address of its namespace without authentication: whoever reaches it can
// read the job keys, write registers or load another program. So
// simple_switch runs in a network namespace of its own, which its process
// creates at start and which is gone with it, holding only its two ports;
// the daemon enters that namespace to run simple_switch_CLI, and nothing
// outside it can reach the Thrift port (docs/p4.md, "Isolation").
#pragma once

#include <sys/types.h>

#include <string>

namespace serene::bmv2 {

// The network namespace of `pid`: /proc/PID/ns/net.
std::string NetnsOf(pid_t pid);

// Moves the calling thread into the network namespace at `path`. For a child
// between fork and exec (only system calls). False on failure, errno set.
bool EnterNetns(const char* path);

// A TCP connection to 127.0.0.1:`port` inside the network namespace at
// `netns` is accepted (the socket is opened there by a short-lived thread;
// this thread's namespace does not change).
bool LoopbackTcpAnswers(const std::string& netns, int port);

}  // namespace serene::bmv2
