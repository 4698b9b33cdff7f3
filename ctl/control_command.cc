// The control subcommand: a Controller running a policy script against a job.
#include <chrono>

#include "control/controller.h"
#include "ctl/commands.h"
#include "ctl/event_format.h"
#include "ctl/policy_source.h"

namespace serene::ctl {
namespace {

uint64_t UnixMillis() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace

int Control(RuntimeClient& client, const ControlOptions& options, Io io) {
  auto script = LoadScript(options.script, options.params);
  if (!script.ok()) return UsageError(script.status().message(), io);

  auto print = [&](const control::ControllerEvent& e) {
    io.out << (options.json ? EventJson(e) : EventLine(e)) << '\n';
    io.out.flush();
  };
  // What the main chunk logged, before the controller's own events.
  for (std::string& line : (*script)->TakeLog()) {
    control::ControllerEvent e;
    e.kind = control::ControllerEvent::Kind::kScriptLog;
    e.message = std::move(line);
    e.unix_ms = UnixMillis();
    print(e);
  }

  control::ControllerOptions controller_options;
  controller_options.job = options.job;
  controller_options.period = options.period;
  controller_options.on_event = print;
  control::Controller controller(&client, script->get(), std::move(controller_options));
  if (options.interrupt != nullptr) {
    if (options.interrupt->triggered()) return kExitOk;  // stopped before it began
    options.interrupt->SetAction([&controller] { controller.Stop(); });
  }
  Status s = controller.Run();
  if (options.interrupt != nullptr) options.interrupt->ClearAction();
  if (!s.ok()) return Failed(s, io);
  return kExitOk;
}

}  // namespace serene::ctl
