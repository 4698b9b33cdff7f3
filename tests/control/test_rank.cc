// serene-test-rank: one worker rank as a process of its own, for tests that
// kill, stop or restart ranks or the switch (kill -9, SIGSTOP). It joins,
// initializes (a restarted rank resumes where the switch says), then pulls,
// pushes ones and clocks until its clock passes --clocks (or, with --steps,
// for that many steps whatever the clock: a switch that restarts starts the
// clock again), printing a line per clock.
// Exit 0 when done, 1 with the client's error on stderr.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <thread>
#include <vector>

#include "serene/client.h"

int main(int argc, char** argv) {
  CLI::App app{"serene-test-rank: one test worker rank"};
  serene::ClientOptions o;
  uint32_t clocks = 10, steps = 0, step_ms = 0, deadline_ms = 20000;
  uint32_t job = 1;
  app.add_option("--switch", o.switch_address)->required();
  app.add_option("--job", job);
  app.add_option("--key", o.key);
  app.add_option("--rank", o.rank)->required();
  app.add_option("--clocks", clocks);
  app.add_option("--steps", steps);
  app.add_option("--step-ms", step_ms);
  app.add_option("--deadline-ms", deadline_ms);
  CLI11_PARSE(app, argc, argv);
  o.job = static_cast<uint16_t>(job);
  o.deadline = std::chrono::milliseconds(deadline_ms);

  auto fail = [](const serene::Status& s) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  };
  auto client = serene::Client::Connect(o);
  if (!client.ok()) return fail(client.status());
  serene::Client& c = **client;
  auto info = c.Join();
  if (!info.ok()) return fail(info.status());
  std::vector<int32_t> model(info->elements, 0), ones(info->elements, 1);
  std::vector<float> init(info->elements, 0.0f);
  if (serene::Status s = c.Initialize(init); !s.ok()) return fail(s);
  std::printf("joined at clock %u\n", c.clock());
  std::fflush(stdout);
  uint32_t rejoins = 0, restarts = 0, step = 0;
  while (steps > 0 ? step++ < steps : c.clock() <= clocks) {
    if (step_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(step_ms));
    if (serene::Status s = c.PullFixed(model); !s.ok()) return fail(s);
    if (serene::Status s = c.PushFixed(ones); !s.ok()) return fail(s);
    auto r = c.Clock();
    if (!r.ok()) return fail(r.status());
    if (r->rejoined) ++rejoins;
    if (r->switch_restarted) ++restarts;
    std::printf("clock %u epoch %u low %u\n", r->clock, r->epoch, r->low);
    std::fflush(stdout);
    if (r->finished) break;
  }
  if (serene::Status s = c.Leave(false); !s.ok()) return fail(s);
  std::printf("done clock=%u rejoins=%u client_rejoins=%llu restarts=%u\n", c.clock() - 1,
              rejoins, static_cast<unsigned long long>(c.stats().rejoins), restarts);
  return 0;
}
