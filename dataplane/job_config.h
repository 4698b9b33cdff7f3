// JobConfig: the geometry, key and initial policy of one aggregation job,
// fixed at job creation (static `--job` specs, the TOML config or the
// runtime API all produce one).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "dataplane/barrier_params.h"
#include "dataplane/consts.h"
#include "dataplane/source_filter.h"
#include "proto/endpoint.h"

namespace serene::dataplane {

struct JobConfig {
  uint16_t id = 0;                         // 1..65535
  uint32_t workers = 0;                    // N ranks, 1..kMaxWorkers
  uint64_t elements = 0;                   // model size in int32 values, 1..kMaxElements
  uint32_t row_width = kDefaultRowWidth;   // R values per row, 1..kMaxRowWidth
  uint32_t scale_log2 = kDefaultScaleLog2;  // fixed point: value = round(x * 2^scale_log2)
  uint32_t key = 0;                        // per-job secret carried by every packet
  BarrierParams policy = BarrierParams::Sync();
  // The daemon (not the pure pipeline) evicts a joined rank whose last packet
  // is older than this, so its peers are not held forever; 0 = never.
  uint32_t evict_after_ms = kDefaultEvictAfterMs;
  // Sources that may send this job's packets (a fixed table of at most
  // kMaxAllowPrefixes prefixes); empty = any source. Others are dropped
  // silently right after the key check (source_not_allowed).
  SourceAllowList allow;
  // The job's reply group: an IPv4 multicast address and port that its ranks
  // may subscribe to (JOIN_ACK advertises it). An exact READ_REPLY to a READ
  // flagged GROUP goes there, so every rank of the host receives the row
  // from one send. Invalid (the default) = none: every reply is unicast.
  proto::Endpoint group;

  uint32_t rows() const { return static_cast<uint32_t>((elements + row_width - 1) / row_width); }
  // Number of values in row r (the last row may be short). REQUIRES: r < rows().
  uint32_t RowLength(uint32_t r) const {
    uint64_t start = uint64_t{r} * row_width;
    return static_cast<uint32_t>(std::min<uint64_t>(row_width, elements - start));
  }

  // Checks every bound; the message names the field, the value and the range.
  Status Validate() const;

  // Parses "id=J,workers=N,elements=E[,row=R][,scale=S][,key=K][,evict_after=D]
  // [,allow=A][,group=G][,policy=P]". S is a power of two written 2^B or in full
  // (16777216); K is decimal or 0x-hex; D a duration (10s, 500ms; 0 = never);
  // A source prefixes separated by ';' (10.0.0.0/8;fd00::/8); P is a
  // BarrierParams strategy (sync, ssp:W, async, quorum:K:L); G an IPv4
  // multicast address and port (239.83.0.1:7100).
  static Result<JobConfig> ParseSpec(std::string_view spec);
  std::string ToString() const;
};

// Parses a fixed-point scale: "2^24", "16777216" (a power of two). Sets the exponent.
bool ParseScale(std::string_view text, uint32_t* log2_out);

// Parses a reply group "A.B.C.D:PORT" (IPv4 multicast, port 1..65535).
Result<proto::Endpoint> ParseGroup(std::string_view text);
std::string FormatGroup(const proto::Endpoint& group);

}  // namespace serene::dataplane
