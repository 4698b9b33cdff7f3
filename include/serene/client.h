// Serene worker client: the library training code links against.
//
// Start here. A Client is one rank of one job on a Serene switch. Per
// iteration a worker pulls the model (READ every row), computes an update,
// pushes it (INC every row) and clocks (CLOCK: blocks until the switch's
// barrier releases it). The switch holds the model in fixed point; the client
// converts floats with the job's scale and reports any value that does not
// fit as an error, never a silent wrap.
//
//   auto options = serene::ClientOptions::FromEnvironment();   // RANK, SERENE_SWITCH, ...
//   auto client = serene::Client::Connect(*options);
//   auto info = (*client)->Join();
//   (*client)->Initialize(model);        // rank 0 seeds the switch, all get the same model
//   for (...) {
//     (*client)->Pull(model);            // the model at the current clock
//     ... update = -lr / N * gradient ...
//     (*client)->Push(update);
//     auto released = (*client)->Clock();  // waits as the policy says
//     if (released->finished) break;
//   }
//
// (Exchange(update, model) does Push, Clock and the next Pull in one call.)
//   (*client)->Leave();
//
// Reliability: READs are pipelined (at most `window` in flight) and
// retransmitted on timeout with exponential backoff; INCs are re-sent only
// when a NACK asks for them; CLOCK is re-sent on timeout and answered
// idempotently. While a CLOCK waits at the barrier the client probes the
// switch (JOIN, which never resets a rank) so a dead switch is told apart
// from a slow peer. Every call ends: it fails with a clear DeadlineExceeded
// error once it has made no progress for `deadline` (a silent switch, a
// barrier that does not move, INCs the switch keeps refusing), never hangs.
// An evicted rank joins again by itself; a switch that lost the job (it
// restarted) is rebuilt by the ranks from their own updates, nothing lost
// (ClockResult::switch_restarted). docs/client.md has the details.
//
// Errors are Status/Result values; nothing throws. A Client is not
// thread-safe: use one per worker thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "common/status.h"

namespace serene {

struct ClientOptions {
  // Switch address, "host:port" or "[v6]:port". Env: SERENE_SWITCH.
  std::string switch_address = "127.0.0.1:7000";
  // Job id and key. Env: SERENE_JOB, SERENE_KEY (decimal or 0x-hex).
  uint16_t job = 1;
  uint32_t key = 0;
  // This worker's rank. Env: RANK, else SERENE_RANK, OMPI_COMM_WORLD_RANK,
  // PMI_RANK, SLURM_PROCID.
  uint32_t rank = 0;
  // Number of ranks; 0 = take the job's. If set, Join() checks it against the
  // switch. Env: WORLD_SIZE, else SERENE_WORLD_SIZE, OMPI_COMM_WORLD_SIZE,
  // PMI_SIZE, SLURM_NTASKS.
  uint32_t world_size = 0;
  // Local address to bind; empty = the wildcard of the switch's family. Env: SERENE_BIND.
  std::string bind_address;
  // READ requests in flight at once. Env: SERENE_WINDOW. Default 128.
  uint32_t window = 128;
  // First retransmission timeout; doubles per attempt up to max_timeout.
  // Env: SERENE_TIMEOUT_MS (initial). Defaults 20 ms and 1 s.
  std::chrono::milliseconds initial_timeout{20};
  std::chrono::milliseconds max_timeout{1000};
  // A call fails once it has made no progress this long (the switch silent,
  // the barrier not moving). Keep it above the longest step a peer takes.
  // Env: SERENE_DEADLINE_S. Default 30 s.
  std::chrono::milliseconds deadline{30000};
  // Socket receive and send buffers, bytes: a pull arrives and a push leaves
  // in bursts of a whole model.
  int socket_buffer_bytes = 8 << 20;
  // UDP segmentation offload: a push or a window of READs leaves as trains
  // of datagrams (GSO) and replies arrive as trains (GRO); the wire carries
  // the same datagrams either way. Env: SERENE_OFFLOAD (on/off). Default on.
  bool offload = true;
  // Treat the switch's SATURATED flag as an error (default) or only report it.
  bool fail_on_saturation = true;
  // Subscribe to the job's reply group when the switch offers one (an IPv4
  // multicast address in the JOIN_ACK): a row another rank of this host READ
  // at this clock then arrives without a READ of our own. Off, or when the
  // group cannot be joined, every row is READ and answered to this rank.
  // Env: SERENE_GROUP (on/off). Default on.
  bool group = true;

  // Options from the environment variables above, on top of `defaults`.
  // Fails with a message naming the variable and its value if one is malformed.
  static Result<ClientOptions> FromEnvironment(ClientOptions defaults);
  static Result<ClientOptions> FromEnvironment() { return FromEnvironment(ClientOptions()); }
};

// The job as the switch described it at JOIN.
struct JobInfo {
  uint32_t workers = 0;
  uint64_t elements = 0;
  uint32_t row_width = 0;
  uint32_t rows = 0;
  uint32_t scale_log2 = 0;
  uint32_t done = 0;      // this rank's last completed clock (0xFFFFFFFF: none)
  bool waiting = false;   // completed `done`, not yet released
  uint32_t low = 0;
  uint32_t high = 0;
  uint32_t epoch = 0;
  // The job's incarnation: changes only when the switch creates the job
  // again (a restarted switch lost its state). 0: not told (older switch).
  uint32_t incarnation = 0;
  // The job's reply group, "A.B.C.D:PORT"; empty: the job has none.
  std::string group;
};

// What the switch said when it released a CLOCK.
struct ClockResult {
  uint32_t clock = 0;      // the clock completed; the worker is now in clock + 1
  uint32_t epoch = 0;      // policy epoch that judged it
  uint32_t low = 0;        // slowest live rank's completed clock
  uint32_t high = 0;       // fastest rank's completed clock
  std::chrono::nanoseconds waited{0};  // time from first CLOCK sent to RELEASE
  bool finished = false;   // the job was ended: stop training
  bool rejoined = false;   // this rank had been evicted and joined again (the clock jumped)
  // The switch had lost the job (it restarted) since the last ClockResult:
  // the ranks joined its new incarnation and rebuilt it from their own
  // updates (the seed and every update, each once, at its own clock;
  // docs/protocol.md, Recovery). Nothing was lost and the clock goes on:
  // pull and go on as usual.
  bool switch_restarted = false;
};

// Counters of one client.
struct ClientStats {
  uint64_t packets_sent = 0;
  uint64_t packets_received = 0;
  uint64_t reads = 0;  // READs sent (first transmissions): rows the group did not bring
  uint64_t read_retransmits = 0;
  uint64_t clock_retransmits = 0;
  uint64_t probes = 0;          // JOINs sent while waiting, to check the switch is alive
  uint64_t nacks = 0;
  uint64_t rows_resent = 0;     // INC rows re-sent after NACKs
  uint64_t stale_replies = 0;   // replies for another clock/row (late duplicates)
  uint64_t rejoins = 0;
  uint64_t switch_restarts = 0;  // times the switch had lost the job and the rank rebuilt it
  // Rows that arrived through the job's reply group (answering another
  // rank's READ, or completed by the ranks' INCs): each is one READ this
  // rank did not send.
  uint64_t group_rows = 0;
  std::chrono::nanoseconds pull_time{0};
  std::chrono::nanoseconds push_time{0};
  std::chrono::nanoseconds clock_wait{0};
};

class Client {
 public:
  // Opens a UDP socket towards the switch. Does not send anything.
  static Result<std::unique_ptr<Client>> Connect(const ClientOptions& options);

  virtual ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // JOIN: binds this rank to the socket's address and learns the job.
  virtual Result<JobInfo> Join() = 0;

  // Brings the rank to a common model: on a fresh job rank 0 seeds the
  // switch with `model` (clock 0) and every rank waits until all did; a rank
  // that joined an ongoing job (restart, eviction) waits for its pending
  // release. Then pulls: on return `model` holds the switch's model.
  // REQUIRES: Join() succeeded; model.size() == elements.
  virtual Status Initialize(std::span<float> model) = 0;

  // READs every row at the current clock into `model` (dequantized).
  virtual Status Pull(std::span<float> model) = 0;
  virtual Status PullFixed(std::span<int32_t> model) = 0;

  // INCs `update` (quantized) into every row at the current clock. Fails,
  // sending nothing, if a value is not finite or outside the fixed-point range,
  // and (FailedPrecondition) if this rank already pushed in this clock: one
  // update per rank per clock, Clock() between two pushes.
  virtual Status Push(std::span<const float> update) = 0;
  virtual Status PushFixed(std::span<const int32_t> update) = 0;

  // CLOCK: completes the current clock and blocks until released.
  virtual Result<ClockResult> Clock() = 0;

  // Push(update), Clock(), then Pull(model) of the clock it released into: an
  // allreduce's shape. Rows the switch sends before the pull starts (the
  // group's completed rows) land straight in `model`, so the fixed-point
  // form copies none twice, and it re-sends INCs from `update` instead of
  // from a copy. `update` and `model` may be the same buffer. If the job
  // finished, `model` is left as it was (ClockResult::finished).
  virtual Result<ClockResult> Exchange(std::span<const float> update, std::span<float> model) = 0;
  virtual Result<ClockResult> ExchangeFixed(std::span<const int32_t> update,
                                            std::span<int32_t> model) = 0;

  // LEAVE: takes this rank out of the barrier; with finish_job, ends the job
  // for every rank (they see ClockResult::finished).
  virtual Status Leave(bool finish_job = false) = 0;

  // The clock this rank is in (its last completed clock + 1).
  virtual uint32_t clock() const = 0;
  virtual const JobInfo& info() const = 0;
  virtual bool finished() const = 0;
  virtual const ClientStats& stats() const = 0;
  // "127.0.0.1:40123": the local address the switch sees.
  virtual std::string local_address() const = 0;
  // When the data of the last Pull (or Exchange) had all reached this host:
  // the latest kernel receive time of what it took, the RELEASE of a Clock()
  // right before it included. A process that was not scheduled when the data
  // came (ranks sharing cores) returns later; a rank with a core of its own
  // would have started computing then (serene-train's compute floor counts
  // from it). Before the first pull: when the client was made.
  virtual std::chrono::steady_clock::time_point data_arrival() const = 0;

 protected:
  Client() = default;
};

// Fixed-point conversion with the job's scale (exposed for tests and tools).
// value = round(x * 2^scale_log2); fails for non-finite x or |value| > 2^31 - 1,
// naming the index and value.
Status Quantize(std::span<const float> in, uint32_t scale_log2, std::span<int32_t> out);
void Dequantize(std::span<const int32_t> in, uint32_t scale_log2, std::span<float> out);

}  // namespace serene
