// Steering of a port's SO_REUSEPORT sockets by Serene's header.
//
// With --threads N the kernel hashes each worker's address to one of the N
// sockets sharing the port. With few workers the hash is often lopsided (4
// workers on 2 threads: 3 + 1 half the time), and one thread then drains
// most of a push while the other idles. SteerByRank attaches a classic BPF
// program to the group that picks socket (job + worker) mod N from the
// datagram's header instead: ranks spread evenly, and each rank's packets
// still stay on one thread, in order. A datagram too short for the header
// goes to socket 0 (the pipeline drops it).
#pragma once

#include <cstdint>

#include "common/status.h"

namespace serene::switchd {

// `fd`: a bound socket of the group, whose sockets were bound in order
// 0..sockets-1. REQUIRES: sockets >= 2.
Status SteerByRank(int fd, uint32_t sockets);

}  // namespace serene::switchd
