// Job admission (docs/control.md, "Admission"): SystemMemory parsing the real
// formats of /proc/meminfo, /proc/self/cgroup, /proc/self/mountinfo and the
// cgroup v1/v2 files (written to a scratch directory: the paths are
// injectable), and Pipeline::CreateJob admitting atomically against it —
// duplicate ids and the job limit under concurrent creates, the memory
// budget with its numbers, every refusal before any allocation.
//
// The same against a real child cgroup and the real daemon under concurrent
// CreateJob calls is admission_e2e_test.cc.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "dataplane/consts.h"
#include "dataplane/job_state.h"
#include "dataplane/pipeline.h"
#include "switch/system_memory.h"
#include "testing/scratch_dir.h"

namespace serene::switchd {
namespace {

namespace fs = std::filesystem;
using dataplane::JobConfig;
using dataplane::Pipeline;
using testing::ScratchDir;

constexpr uint64_t kMiB = 1 << 20;

void Write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

// A fake /proc and cgroup tree under a scratch directory.
class Machine {
 public:
  explicit Machine(std::string_view name) : dir_(name) {}

  SystemMemoryPaths paths() const {
    return {(dir_.path() / "meminfo").string(), (dir_.path() / "cgroup").string(),
            (dir_.path() / "mountinfo").string()};
  }
  fs::path root() const { return dir_.path(); }
  void MemAvailable(uint64_t bytes) {
    Write(root() / "meminfo",
          "MemTotal:       24576000 kB\nMemFree:         1000000 kB\n"
          "MemAvailable:   " +
              std::to_string(bytes / 1024) +
              " kB\n"
              "Buffers:           1234 kB\n");
  }
  // A pure cgroup v2 host: /sys/fs/cgroup is cgroup2; the process is in `path`.
  void V2(const std::string& path) {
    Write(root() / "mountinfo",
          "22 1 0:21 / /proc rw,nosuid - proc proc rw\n"
          "31 23 0:28 / " +
              (root() / "cg2").string() +
              " rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate\n");
    Write(root() / "cgroup", "0::" + path + "\n");
  }
  // A hybrid host (this project's CI machine): memory in a v1 hierarchy,
  // a v2 hierarchy without controllers beside it.
  void V1(const std::string& path) {
    Write(root() / "mountinfo",
          "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
          "32 31 0:29 / " +
              (root() / "cpu").string() +
              " rw,relatime - cgroup cgroup rw,cpu\n"
              "35 31 0:32 / " +
              (root() / "memory").string() +
              " rw,relatime - cgroup cgroup rw,memory\n"
              "41 31 0:38 / " +
              (root() / "unified").string() + " rw,relatime - cgroup2 cgroup2 rw\n");
    Write(root() / "cgroup", "9:name=systemd:/\n8:pids:/\n4:memory:" + path + "\n1:cpu:/\n0::/\n");
  }
  // cgroup v2 files of `path` (relative to the v2 mount).
  void V2Files(const std::string& path, const std::string& max, uint64_t current,
               uint64_t inactive_file) {
    const fs::path d = root() / "cg2" / path.substr(1);
    Write(d / "memory.max", max + "\n");
    Write(d / "memory.current", std::to_string(current) + "\n");
    Write(d / "memory.stat", "anon 1000\nfile 2000\nactive_file 100\ninactive_file " +
                                 std::to_string(inactive_file) + "\nslab 10\n");
  }
  void V1Files(const std::string& path, uint64_t limit, uint64_t usage, uint64_t inactive_file) {
    const fs::path d = root() / "memory" / path.substr(1);
    Write(d / "memory.limit_in_bytes", std::to_string(limit) + "\n");
    Write(d / "memory.usage_in_bytes", std::to_string(usage) + "\n");
    Write(d / "memory.stat", "cache 0\ninactive_file 1\ntotal_cache 0\ntotal_inactive_file " +
                                 std::to_string(inactive_file) + "\n");
  }

 private:
  ScratchDir dir_;
};

TEST(SystemMemoryTest, HostAloneIsMemAvailable) {
  Machine m("serene-mem-host");
  m.MemAvailable(20000 * kMiB);
  auto b = SystemMemory(m.paths()).Read();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->available, 20000 * kMiB);
  EXPECT_EQ(b->source, "the host has 20000 MiB available (MemAvailable)");
}

TEST(SystemMemoryTest, NothingReadableIsNoBudget) {
  Machine m("serene-mem-none");
  EXPECT_FALSE(SystemMemory(m.paths()).Read().has_value());
}

TEST(SystemMemoryTest, CgroupV2MemoryMaxLessItsWorkingSet) {
  Machine m("serene-mem-v2");
  m.MemAvailable(20000 * kMiB);
  m.V2("/jobs/switch");
  m.V2Files("/jobs", "max", 400 * kMiB, 0);
  m.V2Files("/jobs/switch", std::to_string(512 * kMiB), 300 * kMiB, 10 * kMiB);
  SystemMemory mem(m.paths());
  auto loc = mem.Location();
  ASSERT_TRUE(loc.has_value());
  EXPECT_EQ(loc->version, 2);
  EXPECT_EQ(loc->cgroup, "/jobs/switch");
  EXPECT_EQ(loc->directory, (m.root() / "cg2" / "jobs" / "switch").string());
  auto b = mem.Read();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->available, (512 - 290) * kMiB);
  EXPECT_EQ(b->source,
            "cgroup /jobs/switch (v2) allows 512 MiB (memory.max) and 290 MiB of it are in use "
            "(memory.current less inactive_file)");
  EXPECT_EQ(b->remedy, "raise memory.max of cgroup /jobs/switch");
}

TEST(SystemMemoryTest, MaxMeansNoLimitAndTheTightestAncestorWins) {
  Machine m("serene-mem-v2-parent");
  m.MemAvailable(20000 * kMiB);
  m.V2("/jobs/switch");
  m.V2Files("/", "max", 5000 * kMiB, 0);  // the root has no memory.max: "max" alike
  m.V2Files("/jobs", std::to_string(1024 * kMiB), 900 * kMiB, 0);
  m.V2Files("/jobs/switch", "max", 100 * kMiB, 0);
  auto b = SystemMemory(m.paths()).Read();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->available, 124 * kMiB);
  EXPECT_NE(b->source.find("cgroup /jobs (v2) allows 1024 MiB"), std::string::npos) << b->source;

  // Every level "max": the host's memory alone.
  m.V2Files("/jobs", "max", 900 * kMiB, 0);
  b = SystemMemory(m.paths()).Read();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->available, 20000 * kMiB);
  EXPECT_FALSE(SystemMemory(m.paths()).Cgroup().has_value());
}

TEST(SystemMemoryTest, TheHostWinsWhenItHasLessThanTheCgroupAllows) {
  Machine m("serene-mem-v2-host");
  m.MemAvailable(100 * kMiB);
  m.V2("/a");
  m.V2Files("/a", std::to_string(4096 * kMiB), 0, 0);
  auto b = SystemMemory(m.paths()).Read();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->available, 100 * kMiB);
  EXPECT_NE(b->source.find("MemAvailable"), std::string::npos);
}

TEST(SystemMemoryTest, CgroupV1OnAHybridHost) {
  Machine m("serene-mem-v1");
  m.MemAvailable(20000 * kMiB);
  m.V1("/process_api/abc");
  // v1's "no limit" at the top, a limit below.
  m.V1Files("/", 9223372036854771712ull, 3000 * kMiB, 0);
  m.V1Files("/process_api", 9223372036854771712ull, 2000 * kMiB, 0);
  m.V1Files("/process_api/abc", 256 * kMiB, 100 * kMiB, 20 * kMiB);
  SystemMemory mem(m.paths());
  auto loc = mem.Location();
  ASSERT_TRUE(loc.has_value());
  EXPECT_EQ(loc->version, 1);
  EXPECT_EQ(loc->directory, (m.root() / "memory" / "process_api" / "abc").string());
  auto b = mem.Read();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->available, 176 * kMiB);
  EXPECT_EQ(b->source,
            "cgroup /process_api/abc (v1) allows 256 MiB (memory.limit_in_bytes) and 80 MiB of it "
            "are in use (memory.usage_in_bytes less inactive_file)");
  EXPECT_EQ(b->remedy, "raise memory.limit_in_bytes of cgroup /process_api/abc");

  // Unlimited at every level: the host.
  m.V1Files("/process_api/abc", 9223372036854771712ull, 100 * kMiB, 0);
  b = mem.Read();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->available, 20000 * kMiB);
}

TEST(SystemMemoryTest, ACgroupNamespaceMountsOnlyItsSubtree) {
  Machine m("serene-mem-ns");
  m.MemAvailable(20000 * kMiB);
  // The mount's root is /kubepods/pod1; the process is in /kubepods/pod1/c.
  Write(m.root() / "mountinfo", "40 31 0:38 /kubepods/pod1 " + (m.root() / "cg2").string() +
                                    " rw,relatime - cgroup2 cgroup2 rw\n");
  Write(m.root() / "cgroup", "0::/kubepods/pod1/c\n");
  m.V2Files("/c", std::to_string(64 * kMiB), 16 * kMiB, 0);
  SystemMemory mem(m.paths());
  auto loc = mem.Location();
  ASSERT_TRUE(loc.has_value());
  EXPECT_EQ(loc->cgroup, "/kubepods/pod1/c");
  EXPECT_EQ(loc->directory, (m.root() / "cg2" / "c").string());
  auto b = mem.Read();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->available, 48 * kMiB);
}

// --- Pipeline::CreateJob against the budget -----------------------------------

JobConfig Job(uint16_t id, uint64_t elements, uint32_t workers = 1, uint32_t row = 256) {
  JobConfig c;
  c.id = id;
  c.workers = workers;
  c.elements = elements;
  c.row_width = row;
  c.key = 7;
  return c;
}

TEST(AdmissionTest, AJobLargerThanTheBudgetIsRefusedWithTheNumbersAndWhatToDo) {
  Machine m("serene-admit-budget");
  m.MemAvailable(20000 * kMiB);
  m.V2("/switch");
  m.V2Files("/switch", std::to_string(64 * kMiB), 40 * kMiB, 0);
  SystemMemory mem(m.paths());
  Pipeline p(1, {}, &mem);

  // 8 bytes per element (visible + pending): 16 MiB fit the 24 MiB left.
  ASSERT_TRUE(p.CreateJob(Job(1, 16 * kMiB / 8)).ok());
  const JobConfig big = Job(2, 30 * kMiB / 8, 4, 128);
  Status s = p.CreateJob(big);
  EXPECT_EQ(s.code(), Status::Code::kResourceExhausted);
  EXPECT_EQ(s.message(),
            "job 2 (workers=4, elements=3932160, row=128) needs " +
                std::to_string((dataplane::JobStateBytes(big) + kMiB - 1) / kMiB) +
                " MiB of switch memory but only 24 MiB can be given to it: cgroup /switch (v2) "
                "allows 64 MiB (memory.max) and 40 MiB of it are in use (memory.current less "
                "inactive_file); use fewer elements or workers, or a larger row width, or raise "
                "memory.max of cgroup /switch");
  EXPECT_EQ(p.JobIds(), std::vector<uint16_t>{1});

  // The limit raised: admitted.
  m.V2Files("/switch", "max", 40 * kMiB, 0);
  EXPECT_TRUE(p.CreateJob(big).ok());
}

TEST(AdmissionTest, ADuplicateIdIsRefusedBeforeMemoryOrAllocation) {
  Machine m("serene-admit-dup");
  m.MemAvailable(1 * kMiB);  // nothing large fits
  SystemMemory mem(m.paths());
  Pipeline p(1, {}, &mem);
  ASSERT_TRUE(p.CreateJob(Job(3, 10)).ok());
  // 16 GiB of table and 8 TiB of exactly-once tags: a duplicate id must be
  // refused as such, at once, and not be allocated first (the switch used
  // to zero the table before it looked at the id).
  const auto start = std::chrono::steady_clock::now();
  Status s = p.CreateJob(Job(3, dataplane::kMaxElements, 1024, 1));
  EXPECT_EQ(s.code(), Status::Code::kAlreadyExists) << s.message();
  EXPECT_EQ(s.message(), "job 3 already exists");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
  // Without a budget too (tests, the simulator): the id comes first.
  Pipeline unbounded;
  ASSERT_TRUE(unbounded.CreateJob(Job(3, 10)).ok());
  EXPECT_EQ(unbounded.CreateJob(Job(3, dataplane::kMaxElements, 1024, 1)).code(),
            Status::Code::kAlreadyExists);
}

TEST(AdmissionTest, ConcurrentCreatesOfOneIdAdmitExactlyOne) {
  Pipeline p;
  constexpr int kThreads = 16;
  for (int round = 0; round < 20; ++round) {
    std::atomic<int> ok{0}, exists{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        while (!go.load()) std::this_thread::yield();
        Status s = p.CreateJob(Job(9, 1 << 16));
        if (s.ok()) ++ok;
        if (s.code() == Status::Code::kAlreadyExists) ++exists;
      });
    }
    go = true;
    for (auto& t : threads) t.join();
    EXPECT_EQ(ok.load(), 1) << "round " << round;
    EXPECT_EQ(exists.load(), kThreads - 1) << "round " << round;
    ASSERT_TRUE(p.DeleteJob(9).ok());
  }
}

TEST(AdmissionTest, TheJobLimitHoldsUnderConcurrentCreatesAndDeleteFreesASlot) {
  Pipeline p;
  constexpr size_t kFree = 8;
  for (size_t id = 1; id <= dataplane::kMaxJobs - kFree; ++id) {
    ASSERT_TRUE(p.CreateJob(Job(static_cast<uint16_t>(id), 1)).ok());
  }
  constexpr int kThreads = 32;
  std::atomic<int> ok{0}, full{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      Status s = p.CreateJob(Job(static_cast<uint16_t>(5000 + t), 1 << 14));
      if (s.ok()) ++ok;
      if (s.code() == Status::Code::kFailedPrecondition) {
        ++full;
        EXPECT_NE(s.message().find("too many jobs: the switch holds at most 1024"),
                  std::string::npos)
            << s.message();
      }
    });
  }
  go = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), static_cast<int>(kFree));
  EXPECT_EQ(full.load(), kThreads - static_cast<int>(kFree));
  EXPECT_EQ(p.JobIds().size(), dataplane::kMaxJobs);
  EXPECT_EQ(p.CreateJob(Job(60000, 1)).code(), Status::Code::kFailedPrecondition);
  ASSERT_TRUE(p.DeleteJob(1).ok());
  EXPECT_TRUE(p.CreateJob(Job(60000, 1)).ok());
}

}  // namespace
}  // namespace serene::switchd
