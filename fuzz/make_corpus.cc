// make_corpus: writes the fuzzers' seed corpora.
//
//   make_corpus DIR   writes DIR/decode/*.bin and DIR/pipeline/*.bin
//
// decode: one golden packet per op (requests and replies as the switch sends
// them) and one of each kind of malformed datagram. pipeline: action
// sequences (pipeline_actions.h) that join, seed, INC, CLOCK through several
// clocks, swap policies, evict and rejoin, finish, saturate, so that
// coverage-guided mutation starts from deep states. fuzz/corpus/ holds this
// program's output; scripts/fuzz.sh regenerates it into its scratch corpus on
// every run, so the seeds follow the format as it changes.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz/pipeline_actions.h"
#include "packet_builder.h"
#include "proto/codec.h"

namespace serene::fuzz {
namespace {

using proto::Op;
using testing::PacketBuilder;

void Write(const std::filesystem::path& dir, const std::string& name,
           const std::vector<uint8_t>& bytes) {
  std::ofstream f(dir / (name + ".bin"), std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) {
    std::fprintf(stderr, "make_corpus: cannot write %s\n", (dir / name).c_str());
    std::exit(1);
  }
}

void DecodeSeeds(const std::filesystem::path& dir) {
  constexpr uint32_t kKey = 0xC0FFEE;
  auto req = [&](Op op) { return PacketBuilder(op, 1, 2, kKey).Clock(5).Row(1); };
  Write(dir, "join", req(Op::kJoin).Build());
  Write(dir, "read", req(Op::kRead).Build());
  Write(dir, "inc", req(Op::kInc).Values({1, -2, 2147483647, -2147483647 - 1}).Build());
  Write(dir, "clock", req(Op::kClock).Row(3).Flags(proto::flags::kRetransmit).Build());
  Write(dir, "leave_finished", req(Op::kLeave).Flags(proto::flags::kFinished).Build());
  Write(dir, "join_ack",
        req(Op::kJoinAck)
            .Flags(proto::flags::kWaiting)
            .Values({3, 10, 4, 4, 4, 5, 1, 3, 24, 0x1234567})
            .Build());
  Write(dir, "read_reply",
        req(Op::kReadReply).Flags(proto::flags::kExact).Values({1, 2, 3, 4}).Build());
  Write(dir, "release", req(Op::kRelease).Values({2, 4, 5}).Build());
  Write(dir, "nack", req(Op::kNack).Values({1, 3, 0, 2}).Build());
  Write(dir, "error_evicted", req(Op::kError).Flags(proto::flags::kEvicted).Values({7, 6}).Build());
  // Return routability (protocol.md): a COOKIE answering a JOIN, and the
  // JOIN echoing it in clock and row.
  Write(dir, "cookie",
        req(Op::kCookie).Clock(0x9E3779B9).Row(0x7F4A7C15).Flags(proto::cookie::FlagsFor(Op::kJoin)).Build());
  Write(dir, "join_cookie", req(Op::kJoin).Clock(0x9E3779B9).Row(0x7F4A7C15).Build());
  Write(dir, "finished_saturated",
        req(Op::kRelease)
            .Flags(proto::flags::kFinished | proto::flags::kSaturated)
            .Values({0, 0, 0})
            .Build());

  const std::vector<uint8_t> good = req(Op::kInc).Values({1, 2, 3, 4}).Build();
  auto bad = [&](const std::string& name, auto&& edit) {
    std::vector<uint8_t> d = good;
    edit(d);
    Write(dir, "bad_" + name, d);
  };
  bad("empty", [](auto& d) { d.clear(); });
  bad("truncated_header", [](auto& d) { d.resize(23); });
  bad("magic", [](auto& d) { d[0] = 0x12; });
  bad("version", [](auto& d) { d[2] = 2; });
  bad("op_0", [](auto& d) { d[3] = 0; });
  bad("op_12", [](auto& d) { d[3] = 12; });
  bad("count_beyond", [](auto& d) { d.resize(d.size() - 4); });
  bad("trailing_byte", [](auto& d) { d.push_back(0); });
  bad("count_ffff", [](auto& d) {
    d[20] = 0xFF;
    d[21] = 0xFF;
  });
}

void PipelineSeeds(const std::filesystem::path& dir) {
  // Every rank of job A (3 ranks) or B (2 ranks) joins and seeds clock 0.
  auto start = [](uint8_t setup, bool b = false) {
    ActionWriter w(setup);
    const uint8_t n = static_cast<uint8_t>(kJobs[b ? 1 : 0].workers);
    for (uint8_t r = 0; r < n; ++r) w.Join(r, b);
    for (uint8_t r = 0; r < n; ++r) w.Step(r, 1, b);
    return w;
  };
  auto rounds = [](ActionWriter& w, int clocks, bool b = false, uint8_t skip = 0xFF) {
    const uint8_t n = static_cast<uint8_t>(kJobs[b ? 1 : 0].workers);
    for (int c = 0; c < clocks; ++c) {
      for (uint8_t r = 0; r < n; ++r) {
        if (r == skip) continue;
        w.Read(r, static_cast<uint8_t>(c), b);
        w.Step(r, static_cast<int8_t>(c + 2), b);
      }
    }
  };

  {  // SYNC: three full rounds with reads.
    ActionWriter w = start(0);
    rounds(w, 3);
    Write(dir, "sync_rounds", w.bytes());
  }
  {  // SSP(1) with a straggler (rank 2 steps once per two rounds).
    ActionWriter w = start(1);
    rounds(w, 2, false, 2);
    w.Step(2, 5);
    rounds(w, 1);
    Write(dir, "ssp_straggler", w.bytes());
  }
  {  // Two jobs: A is SYNC, B is ASYNC; interleaved.
    ActionWriter w = start(0x08 | (3 << 4));
    for (uint8_t r = 0; r < 2; ++r) w.Join(r, true);
    for (uint8_t r = 0; r < 2; ++r) w.Step(r, -1, true);
    rounds(w, 1);
    rounds(w, 2, true);
    Write(dir, "two_jobs", w.bytes());
  }
  {  // Hot swap SYNC -> ASYNC under a straggler, then back to SSP(2) at a future clock.
    ActionWriter w = start(0);
    w.Step(0, 3).Step(1, 3);
    w.Act(Action::kSetPolicy).U8(3).U8(0);
    w.Step(0, 4).Read(2, 0).Step(2, 4);
    w.Act(Action::kSetPolicy).U8(2).U8(0x80 + 4);
    rounds(w, 2);
    Write(dir, "hot_swap", w.bytes());
  }
  {  // A change ahead (SetPolicy at earliest + 5), cancelled with a wrong
     // epoch, then with the right one; a second change, then steps and a
     // cancel without an epoch. (fuzz/corpus/pipeline/policy_cancel_reached.bin,
     // found by the fuzzer, is a cancel refused because a rank reached it.)
    ActionWriter w = start(0);
    w.Step(0, 1).Step(1, 1).Step(2, 1);
    w.Act(Action::kSetPolicy).U8(3).U8(0x80 + 7);
    w.Act(Action::kSetPolicy).U8(0xE0).U8(0x81);
    w.Act(Action::kSetPolicy).U8(0xE0).U8(0x80);
    w.Act(Action::kSetPolicy).U8(1).U8(0x80 + 3);
    w.Step(0, 2).Step(0, 3);
    w.Act(Action::kSetPolicy).U8(0xE0).U8(0);
    rounds(w, 2);
    Write(dir, "policy_cancel", w.bytes());
  }
  {  // Evict a rank mid-clock, run without it, rejoin (from a new address too).
    ActionWriter w = start(0);
    w.Step(0, 1).Act(Action::kEvict).U8(2);
    rounds(w, 1, false, 2);
    w.Join(2).Read(2, 1).Step(2, 1);
    w.Act(Action::kJoin).U8(1).U8(2 << mods::kAddrShift);  // rank_in_use: rank 1 is live
    w.Act(Action::kEvict).U8(1).Act(Action::kJoin).U8(1).U8(2 << mods::kAddrShift);  // re-binds
    w.Step(1, 1).Act(Action::kStep).U8(0x41).U8(2);  // via the other switch address
    Write(dir, "evict_rejoin", w.bytes());
  }
  {  // A partial clock: INC one row, CLOCK announcing all rows -> NACK; re-send.
    ActionWriter w = start(0);
    w.Act(Action::kInc).U8(0).U8(0).U8(kClockCurrent).U8(1).U8(5).U8(5).U8(5).U8(5);
    w.Act(Action::kClock).U8(0).U8(0).U8(kClockCurrent).U8(5);
    w.Step(0, 5);
    w.Act(Action::kClock).U8(0).U8(0).U8(10).U8(5);  // retransmitted CLOCK(done)
    Write(dir, "nack_resend", w.bytes());
  }
  {  // Job A's group: every rank INCs row 0 (the last completes it, sends it
     // to the group and folds it), READs of the completing clock (exact: the
     // model before it) with and without the group, then full clocks.
    ActionWriter w = start(0);
    for (uint8_t r = 0; r < 3; ++r) {
      w.Act(Action::kInc).U8(r).U8(0).U8(kClockCurrent).U8(0);
      for (int i = 0; i < 4; ++i) w.U8(static_cast<uint8_t>(r + 1));
    }
    w.Act(Action::kRead).U8(0).U8(0).U8(kClockCurrent | kReadGroupBit).U8(0);
    w.Read(1, 0);
    for (uint8_t r = 0; r < 3; ++r) w.Step(r, 2);
    for (uint8_t r = 0; r < 3; ++r) {
      w.Act(Action::kRead).U8(r).U8(0).U8(kClockCurrent | kReadGroupBit).U8(r);
    }
    rounds(w, 2);
    Write(dir, "group_completed_rows", w.bytes());
  }
  {  // Saturation: INT32_MAX twice.
    ActionWriter w = start(0);
    for (uint8_t r = 0; r < 3; ++r) w.Step(r, static_cast<int8_t>(0xF0));
    for (uint8_t r = 0; r < 3; ++r) w.Read(r, 0).Step(r, 1);
    Write(dir, "saturation", w.bytes());
  }
  {  // LEAVE with FINISHED, then CLOCKs of a finished job.
    ActionWriter w = start(1);
    w.Step(0, 1).Act(Action::kLeave).U8(1).U8(0).U8(1);
    rounds(w, 2);
    w.Act(Action::kFinish);
    Write(dir, "leave_finished", w.bytes());
  }
  {  // Time: silence, EvictIfSilent, time going backwards, recreate.
    ActionWriter w = start(0);
    w.Step(0, 1).Act(Action::kAdvance).U16(20000);
    w.Act(Action::kEvictIfSilent).U8(2).U8(100);
    w.Act(Action::kAdvance).U16(0xF005).Step(1, 1);
    w.Act(Action::kTelemetry).Act(Action::kRecreate).U8(1).Join(0);
    Write(dir, "time_evict_recreate", w.bytes());
  }
  {  // Strangers and garbage: raw ops, reply ops, mutated and random datagrams.
    ActionWriter w = start(0);
    w.Act(Action::kRawOp).U8(4).U8(0).U16(0).U32(1).U32(0).U16(0).U8(0);
    w.Act(Action::kRawOp).U8(6).U8(mods::kWrongKey).U16(1).U32(1).U32(3).U16(0).U8(0);
    w.Act(Action::kMutate).U8(3).U8(0).U16(0).U32(1).U32(0).U16(0).U8(0).U8(21).U8(1);
    w.Act(Action::kGarbage).U8(30);
    for (int i = 0; i < 30; ++i) w.U8(static_cast<uint8_t>(0x53 + i));
    rounds(w, 1);
    Write(dir, "strangers", w.bytes());
  }
}

}  // namespace
}  // namespace serene::fuzz

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_corpus DIR  (writes DIR/decode and DIR/pipeline)\n");
    return 2;
  }
  const std::filesystem::path root = argv[1];
  for (const char* target : {"decode", "pipeline"}) {
    std::filesystem::create_directories(root / target);
  }
  serene::fuzz::DecodeSeeds(root / "decode");
  serene::fuzz::PipelineSeeds(root / "pipeline");
  return 0;
}
