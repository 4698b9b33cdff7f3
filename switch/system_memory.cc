#include "switch/system_memory.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

namespace serene::switchd {
namespace {

// v1 writes "no limit" as the largest page count times the page size
// (9223372036854771712 with 4 KiB pages); anything this large is no limit.
constexpr uint64_t kNoLimitV1 = uint64_t{1} << 62;

// What there is rounded down, what is in use rounded up.
std::string MiB(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }
std::string MiBUp(uint64_t bytes) {
  return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB";
}

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::optional<uint64_t> ParseU64(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<uint64_t> ReadU64(const std::string& path) {
  auto text = ReadFile(path);
  return text ? ParseU64(*text) : std::nullopt;
}

// "KEY VALUE [UNIT]" lines (memory.stat, meminfo): VALUE of the first of
// `keys` present.
std::optional<uint64_t> StatValue(const std::string& path,
                                  std::initializer_list<const char*> keys) {
  auto text = ReadFile(path);
  if (!text) return std::nullopt;
  for (const char* key : keys) {
    std::istringstream in(*text);
    std::string line, k;
    uint64_t v = 0;
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      if (fields >> k >> v && k == key) return v;
    }
  }
  return std::nullopt;
}

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t at = s.find(sep, start);
    out.emplace_back(s.substr(start, at == std::string_view::npos ? s.npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      const std::string_view oct = s.substr(i + 1, 3);
      if (std::all_of(oct.begin(), oct.end(), [](char c) { return c >= '0' && c <= '7'; })) {
        out += static_cast<char>((oct[0] - '0') * 64 + (oct[1] - '0') * 8 + (oct[2] - '0'));
        i += 3;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

// A cgroup mount: where it is mounted and which cgroup its root is.
struct Mount {
  std::string root;   // e.g. "/" (or a cgroup namespace's root)
  std::string point;  // e.g. "/sys/fs/cgroup"
};

// The cgroup2 mount (v1 = false) or the v1 mount holding the memory controller.
std::optional<Mount> FindMount(const std::string& mountinfo, bool v1) {
  auto text = ReadFile(mountinfo);
  if (!text) return std::nullopt;
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    // ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream head(line.substr(0, dash)), tail(line.substr(dash + 3));
    std::string id, parent, dev, root, point, fstype, source, super;
    if (!(head >> id >> parent >> dev >> root >> point) || !(tail >> fstype >> source >> super)) {
      continue;
    }
    if (!v1 && fstype == "cgroup2") return Mount{Unescape(root), Unescape(point)};
    if (v1 && fstype == "cgroup") {
      for (const std::string& opt : Split(super, ',')) {
        if (opt == "memory") return Mount{Unescape(root), Unescape(point)};
      }
    }
  }
  return std::nullopt;
}

// The process's cgroup path in the v2 hierarchy (v1 = false) or in the v1
// hierarchy of the memory controller, from /proc/self/cgroup.
std::optional<std::string> CgroupPath(const std::string& self_cgroup, bool v1) {
  auto text = ReadFile(self_cgroup);
  if (!text) return std::nullopt;
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    // HIERARCHY:CONTROLLERS:PATH (the path may itself contain ':')
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    if (!v1 && line.substr(0, a) == "0" && controllers.empty()) return path;
    if (v1) {
      for (const std::string& c : Split(controllers, ',')) {
        if (c == "memory") return path;
      }
    }
  }
  return std::nullopt;
}

// The cgroup `path` under `mount`: its directory and the part of the path
// below the mount's root (a cgroup namespace or a bind mount of a subtree
// shows only that part); nullopt if the mount does not hold it.
std::optional<std::string> Relative(const Mount& mount, const std::string& path) {
  std::string rel = path;
  if (mount.root != "/") {
    if (rel.compare(0, mount.root.size(), mount.root) != 0) return std::nullopt;
    rel = rel.substr(mount.root.size());
  }
  return rel.empty() ? "/" : rel;
}

std::string Join(const Mount& mount, const std::string& rel) {
  return mount.point + (rel == "/" ? "" : rel);
}

std::string Name(const Mount& mount, const std::string& rel) {
  return mount.root == "/" ? rel : mount.root + (rel == "/" ? "" : rel);
}

// The tightest limited level from `rel` up to the mount's root.
std::optional<CgroupRoom> Walk(const Mount& mount, std::string rel, int version) {
  const char* limit_file = version == 2 ? "memory.max" : "memory.limit_in_bytes";
  const char* usage_file = version == 2 ? "memory.current" : "memory.usage_in_bytes";
  std::optional<CgroupRoom> tightest;
  while (true) {
    const std::string dir = Join(mount, rel);
    std::optional<uint64_t> limit = ReadU64(dir + "/" + limit_file);  // "max": no limit
    std::optional<uint64_t> usage = ReadU64(dir + "/" + usage_file);
    if (limit && *limit < kNoLimitV1 && usage) {
      // v2's memory.stat counts the cgroup's subtree; v1's total_ keys do.
      const uint64_t inactive =
          StatValue(dir + "/memory.stat",
                    {version == 2 ? "inactive_file" : "total_inactive_file", "inactive_file"})
              .value_or(0);
      CgroupRoom room;
      room.version = version;
      room.cgroup = Name(mount, rel);
      room.directory = dir;
      room.limit = *limit;
      room.in_use = *usage > inactive ? *usage - inactive : 0;
      if (!tightest || room.room() < tightest->room()) tightest = room;
    }
    if (rel == "/") break;
    const size_t slash = rel.rfind('/');
    rel = slash == 0 ? "/" : rel.substr(0, slash);
  }
  return tightest;
}

struct Found {
  Mount mount;
  std::string rel;  // the cgroup's path below the mount's root
  int version = 2;
};

// The process's memory cgroup. A hybrid host keeps the memory controller in
// a v1 hierarchy (its v2 hierarchy then has none); otherwise it is v2's.
std::optional<Found> FindMemoryCgroup(const SystemMemoryPaths& paths) {
  for (const bool v1 : {true, false}) {
    auto path = CgroupPath(paths.self_cgroup, v1);
    auto mount = path ? FindMount(paths.mountinfo, v1) : std::nullopt;
    auto rel = mount ? Relative(*mount, *path) : std::nullopt;
    if (rel) return Found{*mount, *rel, v1 ? 1 : 2};
  }
  return std::nullopt;
}

}  // namespace

SystemMemory::SystemMemory(SystemMemoryPaths paths) : paths_(std::move(paths)) {}

std::optional<uint64_t> SystemMemory::HostAvailable() const {
  auto kb = StatValue(paths_.meminfo, {"MemAvailable:"});
  if (!kb) return std::nullopt;
  return *kb * 1024;  // the file's unit is kB
}

std::optional<CgroupLocation> SystemMemory::Location() const {
  auto found = FindMemoryCgroup(paths_);
  if (!found) return std::nullopt;
  const auto& [mount, rel, version] = *found;
  return CgroupLocation{version, Name(mount, rel), Join(mount, rel)};
}

std::optional<CgroupRoom> SystemMemory::Cgroup() const {
  auto found = FindMemoryCgroup(paths_);
  if (!found) return std::nullopt;
  const auto& [mount, rel, version] = *found;
  return Walk(mount, rel, version);
}

std::optional<dataplane::MemoryBudget> SystemMemory::Read() const {
  const std::optional<uint64_t> host = HostAvailable();
  const std::optional<CgroupRoom> cg = Cgroup();
  dataplane::MemoryBudget b;
  if (cg && (!host || cg->room() < *host)) {
    const bool v2 = cg->version == 2;
    b.available = cg->room();
    b.source = "cgroup " + cg->cgroup + " (v" + std::to_string(cg->version) + ") allows " +
               MiB(cg->limit) + (v2 ? " (memory.max)" : " (memory.limit_in_bytes)") + " and " +
               MiBUp(cg->in_use) + " of it are in use (" +
               (v2 ? "memory.current" : "memory.usage_in_bytes") + " less inactive_file)";
    b.remedy = std::string("raise ") + (v2 ? "memory.max" : "memory.limit_in_bytes") +
               " of cgroup " + cg->cgroup;
    return b;
  }
  if (host) {
    b.available = *host;
    b.source = "the host has " + MiB(*host) + " available (MemAvailable)";
    b.remedy = "free memory on the host";
    return b;
  }
  return std::nullopt;
}

}  // namespace serene::switchd
