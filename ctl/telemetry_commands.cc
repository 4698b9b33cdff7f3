// The telemetry subcommands: telemetry (one snapshot) and top (a live view).
#include "ctl/commands.h"
#include "ctl/format.h"
#include "ctl/telemetry_view.h"
#include "ctl/top_view.h"

namespace serene::ctl {
namespace {

// ANSI terminal control for top's in-place redraw.
constexpr char kClearScreen[] = "\x1b[2J";
constexpr char kHome[] = "\x1b[H";
constexpr char kClearToLineEnd[] = "\x1b[K";
constexpr char kClearBelow[] = "\x1b[J";
constexpr char kHideCursor[] = "\x1b[?25l";
constexpr char kShowCursor[] = "\x1b[?25h";

// The frame drawn over the previous one: each line clears what the last
// frame left to its right, and the end clears any longer frame's lines.
std::string Redraw(const std::string& frame) {
  std::string out = kHome;
  size_t start = 0;
  while (start < frame.size()) {
    size_t end = frame.find('\n', start);
    if (end == std::string::npos) end = frame.size();
    out.append(frame, start, end - start);
    out += kClearToLineEnd;
    out += '\n';
    start = end + 1;
  }
  out += kClearBelow;
  return out;
}

// The job top watches when none is named: the only one, else the first.
Result<uint32_t> DefaultJob(RuntimeClient& client) {
  auto jobs = client.ListJobs();
  if (!jobs.ok()) return jobs.status();
  if (jobs->empty()) {
    return Status::NotFound("no jobs on the switch at " + client.address() +
                            "; create one with `serene-ctl job create`");
  }
  return jobs->front().job().id();
}

}  // namespace

int Telemetry(RuntimeClient& client, const JobOptions& options, Io io) {
  auto t = client.GetTelemetry(options.job);
  if (!t.ok()) return Failed(t.status(), io);
  io.out << (options.json ? ToJson(*t) + "\n" : RenderTelemetry(*t));
  return kExitOk;
}

int Top(RuntimeClient& client, const TopOptions& options, Io io) {
  uint32_t job = 0;
  if (options.job) {
    job = *options.job;
  } else {
    auto j = DefaultJob(client);
    if (!j.ok()) return Failed(j.status(), io);
    job = *j;
  }
  // The header takes 5 lines; one more is left for the cursor.
  constexpr uint32_t kFrameLines = 6;
  TopContext context{client.address(), options.period, 0};
  if (options.screen_rows > 0) {
    context.max_rank_rows =
        options.screen_rows > kFrameLines + 1 ? options.screen_rows - kFrameLines : 1;
  }
  if (options.interrupt != nullptr) {
    options.interrupt->SetAction([&client] { client.CancelStreams(); });
  }
  if (options.ansi) io.out << kHideCursor << kClearScreen;

  std::optional<v1::JobTelemetry> previous;
  uint64_t frames = 0;
  Status ended = client.StreamTelemetry(job, options.period, [&](const v1::JobTelemetry& t) {
    const std::string frame = RenderTop(previous ? &*previous : nullptr, t, context);
    if (options.ansi) {
      io.out << Redraw(frame);
    } else {
      io.out << (frames > 0 ? "\n" : "") << frame;
    }
    io.out.flush();
    previous = t;
    ++frames;
    return !(options.iterations && frames >= *options.iterations);
  });

  if (options.interrupt != nullptr) options.interrupt->ClearAction();
  if (options.ansi) io.out << kShowCursor;
  io.out.flush();
  if (!ended.ok()) return Failed(ended, io);
  return kExitOk;
}

}  // namespace serene::ctl
