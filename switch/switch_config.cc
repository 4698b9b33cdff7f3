#include "switch/switch_config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/secret_file.h"
#include "common/toml_util.h"
#include "net/address.h"
#include "proto/codec.h"
#include "switch/thread_niceness.h"

namespace serene::switchd {
namespace {

constexpr std::string_view kTopKeys =
    "bind, port, threads, batch, nice, sched, recv_buffer, send_buffer, offload, log_level, fault, "
    "control, token_file, metrics, metrics_token_file, job";
constexpr std::string_view kJobKeys =
    "id, workers, elements, row, scale, key, key_file, evict_after, allow, group, policy";
// UDP payload that fits a 1500-byte Ethernet frame over IPv4 (20 + 8 bytes of headers).
constexpr size_t kEthernetUdpPayload = 1472;

Status Bad(const std::string& setting, std::string_view value, std::string_view expected) {
  return Status::InvalidArgument(setting + " '" + std::string(value) + "': expected " +
                                 std::string(expected));
}

bool ParseU64(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

Status SetUint(const std::string& setting, std::string_view text, uint64_t lo, uint64_t hi,
               std::string_view what, uint64_t* out, std::string_view note = "") {
  uint64_t v = 0;
  if (!ParseU64(text, &v) || v < lo || v > hi) {
    return Bad(setting, text,
               std::string(what) + " " + std::to_string(lo) + ".." + std::to_string(hi) +
                   std::string(note));
  }
  *out = v;
  return Status::Ok();
}

// "HOST:PORT" with a numeric host (or localhost) and a port number.
bool IsHostPort(std::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  uint64_t port = 0;
  if (!ParseU64(text.substr(colon + 1), &port) || port > 65535) return false;
  std::string_view host = text.substr(0, colon);
  if (host == "localhost") return true;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return net::ParseHost(host, 0).ok();
}

// The settings shared by the command line and the file, applied from text.
// `setting` is how the user wrote it ("--port", "file.toml: port").
Status ApplySetting(std::string_view key, const std::string& setting, std::string_view text,
                    SwitchConfig* c) {
  uint64_t v = 0;
  Status s;
  if (key == "port") {
    s = SetUint(setting, text, 0, 65535, "a UDP port number", &v, " (0 = ephemeral)");
    if (s.ok()) c->server.port = static_cast<uint16_t>(v);
  } else if (key == "threads") {
    s = SetUint(setting, text, 1, kMaxThreads, "a number of threads", &v);
    if (s.ok()) c->server.threads = static_cast<uint32_t>(v);
  } else if (key == "nice") {
    const std::optional<int> nice = ParseNiceness(text);
    if (!nice) {
      return Bad(setting, text,
                 "a niceness -20..19 for the loop threads (lower runs first; below the "
                 "current one needs root or CAP_SYS_NICE)");
    }
    c->server.nice = *nice;
  } else if (key == "sched") {
    if (text != "normal" && text != "batch") return Bad(setting, text, "normal or batch");
    c->server.sched_batch = text == "batch";
  } else if (key == "batch") {
    s = SetUint(setting, text, 1, net::kMaxBatch, "datagrams per batch", &v);
    if (s.ok()) c->server.batch = static_cast<uint32_t>(v);
  } else if (key == "recv_buffer" || key == "send_buffer") {
    int bytes = 0;
    if (!ParseByteSize(text, &bytes)) {
      return Bad(setting, text,
                 "a size in bytes 0..1GiB, e.g. 4194304 or 4MiB (0 = kernel default)");
    }
    (key == "recv_buffer" ? c->server.recv_buffer : c->server.send_buffer) = bytes;
    if (key == "recv_buffer") c->recv_buffer_given = true;
  } else if (key == "offload") {
    if (text != "on" && text != "off") return Bad(setting, text, "on or off");
    c->server.offload = text == "on";
  } else if (key == "log_level") {
    if (!IsLogLevel(text)) {
      return Bad(setting, text, "one of trace, debug, info, warn, error, critical, off");
    }
    c->log_level = std::string(text);
  } else if (key == "control" || key == "metrics") {
    const bool off = text == "off" || (key == "metrics" && text.empty());
    if (!off && !IsHostPort(text)) {
      return Bad(setting, text,
                 "HOST:PORT with a numeric host or localhost, e.g. 127.0.0.1:" +
                     std::string(key == "control" ? "7001" : "9100") + " or [::1]:0, or off");
    }
    if (key == "control") {
      c->control = std::string(text);
      c->control_given = true;
    } else {
      c->metrics = off ? "" : std::string(text);
    }
  } else if (key == "token_file") {
    if (text.empty()) return Bad(setting, text, "a file holding the runtime API's token");
    c->token_file = std::string(text);
  } else if (key == "metrics_token_file") {
    if (text.empty()) return Bad(setting, text, "a file holding /metrics' token");
    c->metrics_token_file = std::string(text);
  } else if (key == "fault") {
    auto f = net::FaultSpec::Parse(text);
    if (!f.ok()) return Status::InvalidArgument(setting + ": " + f.status().message());
    c->server.fault = *f;
  } else {
    return Status::Internal("unknown setting " + std::string(key));
  }
  return s;
}

Status SetBind(const std::string& setting, const std::vector<std::string>& hosts, SwitchConfig* c) {
  for (const std::string& h : hosts) {
    auto ep = net::ParseHost(h, 0);
    if (!ep.ok()) {
      return Bad(setting, h,
                 "a numeric IPv4 or IPv6 address to bind, e.g. 0.0.0.0, ::, 127.0.0.1 or ::1");
    }
  }
  c->server.bind = hosts;
  return Status::Ok();
}

// A scalar TOML value as text (integers in decimal), or nullopt for other types.
std::optional<std::string> ScalarText(const toml::node& node) {
  if (auto i = node.as_integer()) return std::to_string(i->get());
  if (auto s = node.as_string()) return s->get();
  return std::nullopt;
}

// A job spec that may name its key's file (key_file=PATH, read here: the
// data plane's ParseSpec does no I/O). A key_file and a key= are exclusive.
Result<dataplane::JobConfig> ParseJobWithKeyFile(std::string_view spec) {
  constexpr std::string_view kKeyFileField = "key_file=";
  std::string rest;
  std::optional<std::string> key_file;
  bool has_key = false;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t end = spec.find(',', start);
    if (end == std::string_view::npos) end = spec.size();
    const std::string_view item = spec.substr(start, end - start);
    if (item.starts_with(kKeyFileField)) {
      key_file = std::string(item.substr(kKeyFileField.size()));
    } else {
      has_key = has_key || item.starts_with("key=");
      rest += (rest.empty() ? "" : ",") + std::string(item);
    }
    start = end + 1;
  }
  if (key_file && has_key) {
    return Status::InvalidArgument("give a job's key once: key= or key_file=, not both");
  }
  auto job = dataplane::JobConfig::ParseSpec(rest);
  if (!job.ok() || !key_file) return job;
  Result<uint32_t> key = ReadKeyFile(*key_file);
  if (!key.ok()) return Status::InvalidArgument("key_file: " + key.status().message());
  job->key = *key;
  return job;
}

Result<dataplane::JobConfig> ParseTomlJob(const toml::table& t, const std::string& where) {
  std::string spec;
  std::optional<dataplane::BarrierParams> policy;
  dataplane::SourceAllowList allow;
  for (auto&& [k, node] : t) {
    const std::string key(k.str());
    if (key != "id" && key != "workers" && key != "elements" && key != "row" && key != "scale" &&
        key != "key" && key != "key_file" && key != "evict_after" && key != "allow" &&
        key != "group" && key != "policy") {
      return Status::InvalidArgument(where + ": unknown key '" + key + "' (expected " +
                                     std::string(kJobKeys) + ")");
    }
    if (key == "allow") {
      // An array of prefixes (or one string, ';'-separated as in --job).
      std::string list;
      if (auto arr = node.as_array()) {
        for (const auto& elem : *arr) {
          auto prefix = elem.as_string();
          if (!prefix) {
            return Status::InvalidArgument(where +
                                           ": allow: expected an array of prefix "
                                           "strings such as [\"10.0.0.0/8\", "
                                           "\"fd00::/8\"], found " +
                                           TomlTypeName(elem) + " in the array");
          }
          if (prefix->get().empty() || prefix->get().find(';') != std::string::npos) {
            return Status::InvalidArgument(where + ": allow '" + prefix->get() +
                                           "': expected one prefix per array element");
          }
          list += (list.empty() ? "" : ";") + prefix->get();
        }
      } else if (auto str = node.as_string()) {
        list = str->get();
      } else {
        return Status::InvalidArgument(where + ": allow is " + TomlTypeName(node) +
                                       ", expected an array of prefixes such as "
                                       "[\"10.0.0.0/8\", \"fd00::/8\"]");
      }
      auto parsed = dataplane::SourceAllowList::Parse(list);
      if (!parsed.ok()) return Status::InvalidArgument(where + ": " + parsed.status().message());
      allow = *parsed;
      continue;
    }
    auto text = ScalarText(node);
    if (!text) {
      return Status::InvalidArgument(where + ": " + key + " is " + TomlTypeName(node) +
                                     ", expected an integer or a string");
    }
    if (key == "policy") {
      // Parsed apart: the general form "window=W,quorum=K,lag=L" contains commas.
      auto p = dataplane::BarrierParams::Parse(*text);
      if (!p.ok()) return Status::InvalidArgument(where + ": " + p.status().message());
      policy = *p;
      continue;
    }
    spec += (spec.empty() ? "" : ",") + key + "=" + *text;
  }
  auto job = ParseJobWithKeyFile(spec);
  if (!job.ok()) return Status::InvalidArgument(where + ": " + job.status().message());
  if (policy) job->policy = *policy;
  job->allow = allow;
  Status s = job->Validate();
  if (!s.ok()) return Status::InvalidArgument(where + ": " + s.message());
  return job;
}

}  // namespace

bool ParseByteSize(std::string_view text, int* out) {
  struct Suffix {
    std::string_view name;
    uint64_t mult;
  };
  static constexpr Suffix kSuffixes[] = {{"KiB", 1ull << 10}, {"MiB", 1ull << 20},
                                         {"GiB", 1ull << 30}, {"K", 1ull << 10},
                                         {"M", 1ull << 20},   {"G", 1ull << 30}};
  uint64_t mult = 1;
  for (const Suffix& s : kSuffixes) {
    if (text.size() > s.name.size() && text.ends_with(s.name)) {
      text.remove_suffix(s.name.size());
      mult = s.mult;
      break;
    }
  }
  uint64_t v = 0;
  if (!ParseU64(text, &v) || v > static_cast<uint64_t>(kMaxSocketBuffer) / mult) return false;
  *out = static_cast<int>(v * mult);
  return true;
}

bool IsLogLevel(std::string_view level) {
  for (std::string_view l : {"trace", "debug", "info", "warn", "error", "critical", "off"}) {
    if (level == l) return true;
  }
  return false;
}

Status SwitchConfig::AddJob(const dataplane::JobConfig& job) {
  for (const auto& j : jobs) {
    if (j.id == job.id) {
      return Status::AlreadyExists("job id " + std::to_string(job.id) +
                                   " is defined twice (each id once, in the config file or "
                                   "with --job)");
    }
  }
  jobs.push_back(job);
  return Status::Ok();
}

std::vector<std::string> SwitchConfig::Warnings() const {
  std::vector<std::string> w;
  bool loopback_only = !server.bind.empty();
  for (const std::string& h : server.bind) {
    auto ep = net::ParseHost(h, 0);
    loopback_only = loopback_only && ep.ok() && net::IsLoopback(*ep);
  }
  for (const auto& j : jobs) {
    if (j.key == 0) {
      w.push_back("job " + std::to_string(j.id) + " has no key (key=0): any host " +
                  (j.allow.empty() ? std::string("that reaches the switch")
                                   : "in its allow-list (" + j.allow.ToString() + ")") +
                  " can join it and write its model; set key=<32-bit secret>");
    }
    const size_t datagram = proto::PacketSize(j.row_width);
    if (!loopback_only && datagram > kEthernetUdpPayload) {
      w.push_back("job " + std::to_string(j.id) + ": rows of " + std::to_string(j.row_width) +
                  " values make " + std::to_string(datagram) +
                  "-byte datagrams, more than a 1500-byte MTU carries (" +
                  std::to_string(kEthernetUdpPayload) +
                  "): they will be IP-fragmented; row=256 fits");
    }
  }
  for (uint16_t id : argv_key_jobs) {
    w.push_back("job " + std::to_string(id) +
                ": its key is on the command line (--job key=), where every local user can read "
                "it (/proc/PID/cmdline); give key_file=FILE (mode 0600) instead");
  }
  return w;
}

Result<SwitchConfig> ParseTomlConfig(std::string_view text, std::string_view source) {
  const std::string src(source);
  Result<toml::table> parsed = ParseTomlDocument(text, source);
  if (!parsed.ok()) return parsed.status();
  const toml::table& root = *parsed;
  SwitchConfig c;
  for (auto&& [k, node] : root) {
    const std::string key(k.str());
    const std::string setting = src + ": " + key;
    Status s;
    if (key == "bind") {
      std::vector<std::string> hosts;
      if (auto str = node.as_string()) {
        hosts.push_back(str->get());
      } else if (auto arr = node.as_array()) {
        for (const auto& elem : *arr) {
          auto h = elem.as_string();
          if (!h) {
            return Status::InvalidArgument(setting +
                                           ": expected a string or an array of "
                                           "strings, found " +
                                           TomlTypeName(elem) + " in the array");
          }
          hosts.push_back(h->get());
        }
      } else {
        return Status::InvalidArgument(setting + " is " + TomlTypeName(node) +
                                       ", expected an address or an array of addresses");
      }
      s = SetBind(setting, hosts, &c);
    } else if (key == "job") {
      auto arr = node.as_array();
      if (arr == nullptr || !arr->is_array_of_tables()) {
        return Status::InvalidArgument(setting + ": expected [[job]] tables");
      }
      for (size_t i = 0; i < arr->size(); ++i) {
        auto job =
            ParseTomlJob(*arr->get(i)->as_table(), src + ": [[job]] #" + std::to_string(i + 1));
        if (!job.ok()) return job.status();
        s = c.AddJob(*job);
        if (!s.ok()) return Status::InvalidArgument(src + ": " + s.message());
      }
    } else if (key == "port" || key == "threads" || key == "batch" || key == "nice" ||
               key == "sched" ||
               key == "recv_buffer" ||
               key == "send_buffer" || key == "offload" || key == "log_level" || key == "fault" ||
               key == "control" || key == "token_file" || key == "metrics" ||
               key == "metrics_token_file") {
      auto value = ScalarText(node);
      if (!value) {
        return Status::InvalidArgument(setting + " is " + TomlTypeName(node) +
                                       ", expected an integer or a string");
      }
      s = ApplySetting(key, setting, *value, &c);
    } else {
      return Status::InvalidArgument(src + ": unknown key '" + key + "' (expected " +
                                     std::string(kTopKeys) + ")");
    }
    if (!s.ok()) return s;
  }
  return c;
}

Result<SwitchConfig> LoadTomlConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::NotFound("cannot read config file '" + path + "': " + std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return ParseTomlConfig(text.str(), path);
}

Result<SwitchConfig> BuildConfig(const SwitchFlags& flags) {
  SwitchConfig c;
  if (flags.config_path) {
    auto file = LoadTomlConfig(*flags.config_path);
    if (!file.ok()) return file.status();
    c = std::move(*file);
  }
  if (!flags.bind.empty()) {
    Status s = SetBind("--bind", flags.bind, &c);
    if (!s.ok()) return s;
  }
  const std::pair<std::string_view, const std::optional<std::string>*> settings[] = {
      {"port", &flags.port},
      {"threads", &flags.threads},
      {"batch", &flags.batch},
      {"nice", &flags.nice},
      {"sched", &flags.sched},
      {"recv_buffer", &flags.recv_buffer},
      {"send_buffer", &flags.send_buffer},
      {"offload", &flags.offload},
      {"log_level", &flags.log_level},
      {"fault", &flags.fault},
      {"control", &flags.control},
      {"token_file", &flags.token_file},
      {"metrics", &flags.metrics},
      {"metrics_token_file", &flags.metrics_token_file}};
  for (const auto& [key, value] : settings) {
    if (!value->has_value()) continue;
    std::string flag = "--" + std::string(key);
    std::replace(flag.begin(), flag.end(), '_', '-');
    Status s = ApplySetting(key, flag, **value, &c);
    if (!s.ok()) return s;
  }
  for (const std::string& spec : flags.jobs) {
    auto job = ParseJobWithKeyFile(spec);
    if (!job.ok()) return Status::InvalidArgument("--job: " + job.status().message());
    if (job->key != 0 && spec.find("key_file=") == std::string::npos) {
      c.argv_key_jobs.push_back(job->id);
    }
    Status s = c.AddJob(*job);
    if (!s.ok()) return s;
  }
  if (!c.recv_buffer_given) c.server.recv_buffer = AutoRecvBuffer(c.jobs);
  return c;
}

int AutoRecvBuffer(const std::vector<dataplane::JobConfig>& jobs) {
  constexpr uint64_t kMin = 4 << 20, kMax = 256 << 20;
  uint64_t burst = 0;
  for (const auto& job : jobs) burst = std::max<uint64_t>(burst, uint64_t{job.workers} * job.elements * 4);
  return static_cast<int>(std::clamp(burst, kMin, kMax));
}

}  // namespace serene::switchd
