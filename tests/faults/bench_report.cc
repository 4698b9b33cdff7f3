#include "bench_report.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

namespace serene::faults {
namespace {

uint64_t U64(const std::string& s) { return std::stoull(s); }

// "key=value" pairs of a counters line, in order.
std::map<std::string, uint64_t> Pairs(const std::string& text) {
  static const std::regex kPair(R"(([A-Za-z_]+)=(\d+))");
  std::map<std::string, uint64_t> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kPair);
       it != std::sregex_iterator(); ++it) {
    out[(*it)[1]] = U64((*it)[2]);
  }
  return out;
}

// The state letter of /proc/PID/stat ('Z': exited, not yet reaped), or 0.
char ProcessState(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  std::getline(in, stat);
  const size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ? 0 : stat[paren + 2];
}

// Every descendant of `root`, parents before children.
std::vector<pid_t> Descendants(pid_t root) {
  std::vector<pid_t> out;
  std::vector<pid_t> frontier = {root};
  while (!frontier.empty()) {
    const pid_t p = frontier.back();
    frontier.pop_back();
    for (const ProcessInfo& c : ChildrenOf(p)) {
      out.push_back(c.pid);
      frontier.push_back(c.pid);
    }
  }
  return out;
}

}  // namespace

BenchReport ParseBenchOutput(const std::string& output) {
  // apps/serene_bench.cc's table rows, "stopped"/"died" rows and summary.
  static const std::regex kRow(
      R"(^\s*(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(-?\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(OK|FAILED: .*)$)");
  static const std::regex kStopped(R"(^\s*(\d+)\s+stopped: .*$)");
  static const std::regex kDied(R"(^\s*(\d+)\s+died \(exit (-?\d+)\) without a report$)");
  static const std::regex kSummary(
      R"(^(OK|FAILED): \d+ clocks in .* (\d+) retransmissions, (\d+) NACKs$)");
  // switch/counters_report.cc's lines.
  static const std::regex kFaults(R"(^faults (rx|tx): (.*)$)");
  static const std::regex kRequests(R"(^\s+requests:(.*)$)");
  static const std::regex kReplies(R"(^\s+replies: (.*)$)");
  static const std::regex kDrops(R"(^\s+drops:(.*)$)");
  static const std::regex kSwitchRank(R"(^\s+rank (\d+) .*done=(-|\d+)( waiting)?( left)? (joins=.*)$)");

  BenchReport r;
  r.output = output;
  std::istringstream in(output);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (line.find("=== serene-switch counters ===") != std::string::npos) {
      r.sw.present = true;
      continue;
    }
    if (r.sw.present) {
      if (std::regex_match(line, m, kFaults)) {
        (m[1] == "rx" ? r.sw.rx : r.sw.tx) = testing::ParseInjectorCounters(m[2]);
      } else if (std::regex_match(line, m, kRequests)) {
        r.sw.requests = Pairs(m[1]);
      } else if (std::regex_match(line, m, kReplies)) {
        const auto p = Pairs(m[1]);
        r.sw.releases = p.count("releases") ? p.at("releases") : 0;
        r.sw.nacks = p.count("nacks") ? p.at("nacks") : 0;
        r.sw.errors = p.count("errors") ? p.at("errors") : 0;
      } else if (std::regex_match(line, m, kDrops)) {
        r.sw.drops = Pairs(m[1]);
      } else if (std::regex_match(line, m, kSwitchRank)) {
        SwitchRank s;
        s.rank = static_cast<uint32_t>(U64(m[1]));
        s.done = m[2] == "-" ? -1 : static_cast<int64_t>(U64(m[2]));
        s.waiting = m[3].matched;
        s.left = m[4].matched;
        const auto p = Pairs(m[5]);
        auto get = [&](const char* k) { return p.count(k) ? p.at(k) : uint64_t{0}; };
        s.joins = get("joins");
        s.reads = get("reads");
        s.incs = get("incs");
        s.inc_dups = get("inc_dups");
        s.clocks = get("clocks");
        s.nacks = get("nacks");
        s.releases = get("releases");
        s.errors = get("errors");
        r.sw.ranks.push_back(s);
      }
      continue;
    }
    if (std::regex_match(line, m, kRow)) {
      BenchRank b;
      b.rank = static_cast<uint32_t>(U64(m[1]));
      b.reported = true;
      b.clocks = static_cast<uint32_t>(U64(m[2]));
      b.checked = static_cast<uint32_t>(U64(m[3]));
      b.seconds = std::stod(m[4]);
      b.re_reads = U64(m[9]);
      b.re_clocks = U64(m[10]);
      b.nacks = U64(m[11]);
      b.ok = m[12] == "OK";
      if (!b.ok) b.error = std::string(m[12]).substr(std::string("FAILED: ").size());
      r.ranks.push_back(b);
    } else if (std::regex_match(line, m, kStopped)) {
      BenchRank b;
      b.rank = static_cast<uint32_t>(U64(m[1]));
      b.stopped = true;
      r.ranks.push_back(b);
    } else if (std::regex_match(line, m, kDied)) {
      BenchRank b;
      b.rank = static_cast<uint32_t>(U64(m[1]));
      b.died_exit = std::stoi(m[2]);
      r.ranks.push_back(b);
    } else if (std::regex_match(line, m, kSummary)) {
      r.summary_seen = true;
      r.summary_ok = m[1] == "OK";
      r.retransmissions = U64(m[2]);
      r.nacks = U64(m[3]);
    }
  }
  return r;
}

std::vector<ProcessInfo> ChildrenOf(pid_t parent) {
  std::vector<ProcessInfo> out;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return out;
  while (dirent* e = readdir(dir)) {
    if (!std::all_of(e->d_name, e->d_name + std::strlen(e->d_name),
                     [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    std::ifstream in(std::string("/proc/") + e->d_name + "/stat");
    std::string stat;
    if (!std::getline(in, stat)) continue;
    // pid (comm) state ppid ...; comm may hold spaces and parentheses.
    const size_t open = stat.find('('), close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid != parent) continue;
    out.push_back({static_cast<pid_t>(std::stol(e->d_name)), stat.substr(open + 1, close - open - 1)});
  }
  closedir(dir);
  return out;
}

BenchProcess::BenchProcess(const std::string& binary, const std::vector<std::string>& args) {
  std::vector<pid_t> before;
  for (const ProcessInfo& p : ChildrenOf(getpid())) before.push_back(p.pid);
  started_at_ = std::chrono::steady_clock::now();
  child_ = std::make_unique<loadgen::ChildProcess>(binary, args);
  if (!child_->started()) return;
  // posix_spawn returns once the child has exec'd: it is the new child.
  for (const ProcessInfo& p : ChildrenOf(getpid())) {
    if (std::find(before.begin(), before.end(), p.pid) == before.end()) pid_ = p.pid;
  }
}

bool BenchProcess::WaitForOutput(const std::string& text, std::chrono::milliseconds guard) {
  return child_ && child_->WaitForOutput(text, guard).has_value();
}

BenchReport BenchProcess::Finish(std::chrono::milliseconds guard) {
  if (!child_ || !child_->started()) {
    BenchReport r;
    r.output = "serene-bench could not be started";
    return r;
  }
  const auto deadline = started_at_ + guard;
  // Poll rather than child_->Wait(guard): on a hang the bench's own children
  // must be killed while they are still findable as its descendants.
  while (pid_ > 0 && ProcessState(pid_) != 'Z' && ProcessState(pid_) != 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  bool killed = false;
  if (pid_ > 0 && ProcessState(pid_) != 'Z' && ProcessState(pid_) != 0) {
    std::vector<pid_t> tree = Descendants(pid_);
    for (auto it = tree.rbegin(); it != tree.rend(); ++it) kill(*it, SIGKILL);
    kill(pid_, SIGKILL);
    killed = true;
  }
  const std::optional<int> code = child_->Wait(std::chrono::seconds(10));
  BenchReport r = ParseBenchOutput(child_->output());
  r.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_at_).count();
  if (!killed) r.exit_code = code;
  return r;
}

void ExpectFaultsFired(const std::string& spec, const BenchReport& r, bool expect_retransmissions) {
  testing::ExpectFaultsFired(
      spec, {r.sw.rx, r.sw.tx},
      // Lost INC rows come back through NACKs, lost READs and CLOCKs through
      // timeouts: both are the ranks recovering (seen: drop=0.001,burst=64,
      // dir=rx dropped 384 requests, all INCs, and 7 NACKs re-sent them).
      expect_retransmissions ? std::optional(r.retransmissions + r.nacks) : std::nullopt,
      r.output);
}

}  // namespace serene::faults
