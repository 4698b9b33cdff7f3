"""python3 -m serene.launch: start a Serene job's ranks (and its switch).

    python3 -m serene.launch --nproc 4 --elements 79510 train.py --steps 500

starts a serene-switch on a free loopback port with one job of --nproc
workers and --elements elements, then --nproc copies of the script, each with
RANK, LOCAL_RANK, WORLD_SIZE, SERENE_SWITCH, SERENE_JOB and SERENE_KEY set
(what serene.Client.from_env() reads, and torchrun's names). With --switch
HOST:PORT it uses a running switch whose job already exists instead. With
--no-python it starts a program instead of a script: serene-train reads the
same variables, so `--no-python build/bin/serene-train --backend serene`
runs the C++ ranks the same way.

It waits for every rank. If one fails, or the switch dies, or --timeout
passes, it stops the others and exits non-zero saying which and why; it stops
the switch it started in every case — even when the launcher itself is
killed with SIGKILL (the switch gets SIGTERM from the kernel), after which
the ranks fail at their client deadline.
"""

import argparse
import ctypes
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

_LISTENING = re.compile(r"listening on (\S+)")
_RUNTIME_API = re.compile(r"runtime API at (\S+)")


def _log(message):
    print(f"serene.launch: {message}", file=sys.stderr, flush=True)


def _die_with_parent():
    """In the child before exec: SIGTERM when the launcher dies, even of
    kill -9, so a switch it started never outlives it (Linux prctl)."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class LaunchError(Exception):
    """A launch that cannot go on; the message says why and what to do."""


def find_binary(name, explicit=None):
    """The path of Serene's program `name` (serene-switch, serene-ctl): `explicit`,
    else $SERENE_BIN_DIR/name, else the bin/ beside the package (build/bin),
    else PATH; LaunchError saying where it looked if none is there."""
    candidates = []
    if explicit:
        candidates.append(Path(explicit))
    if os.environ.get("SERENE_BIN_DIR"):
        candidates.append(Path(os.environ["SERENE_BIN_DIR"]) / name)
    # The package is assembled in build/python/serene; the binaries in build/bin.
    candidates.append(Path(__file__).resolve().parents[2] / "bin" / name)
    on_path = shutil.which(name)
    if on_path:
        candidates.append(Path(on_path))
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    raise LaunchError(
        f"no {name} binary found (looked at "
        + ", ".join(str(c) for c in candidates)
        + f"); build it (cmake --build build --target {name}) or put it on PATH"
        + (" or pass --switch-bin PATH or --switch HOST:PORT" if name == "serene-switch" else "")
    )


def _find_switch_binary(explicit):
    return find_binary("serene-switch", explicit)


class SwitchProcess:
    """A serene-switch child on an ephemeral loopback port; its log goes to a file.

    `job_spec` is a static job (None: no job). `control` is the runtime API's
    address ("off", or "127.0.0.1:0" for a free port, then `control_address`
    is where it listens); `token_file` the API's token file."""

    def __init__(self, binary, job_spec, log_path, start_timeout_s=20.0, control="off",
                 token_file=None):
        self.log_path = log_path
        self._log = open(log_path, "w")
        command = [str(binary), "--bind", "127.0.0.1", "--port", "0", "--control", control]
        if token_file is not None:
            command += ["--token-file", str(token_file)]
        if job_spec is not None:
            command += ["--job", job_spec]
        self.process = subprocess.Popen(
            command,
            stdout=self._log,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=_die_with_parent,  # started before any thread of ours
        )
        self.address = None
        self.control_address = None
        found = threading.Event()

        def drain():
            for line in self.process.stderr:
                self._log.write(line)
                self._log.flush()
                m = _RUNTIME_API.search(line)
                if m:  # logged before "listening on"
                    self.control_address = m.group(1)
                m = _LISTENING.search(line)
                if m and not found.is_set():
                    self.address = m.group(1)
                    found.set()

        self._drainer = threading.Thread(target=drain, daemon=True)
        self._drainer.start()
        deadline = time.monotonic() + start_timeout_s
        while not found.wait(0.05):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise LaunchError(
                    f"serene-switch did not start (exit code {self.process.returncode}); "
                    f"its log: {log_path}:\n" + Path(log_path).read_text()[-2000:]
                )

    def alive(self):
        return self.process.poll() is None

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._drainer.join(timeout=5)
        self._log.close()


def draw_key():
    """A non-zero 32-bit job key from the kernel's secure generator (getrandom(2))."""
    while True:
        key = int.from_bytes(os.getrandom(4), "little")
        if key:
            return key


def write_private_key_file(key):
    """Writes `key` into a new 0600 file in a new 0700 directory; returns (directory, path).

    The started switch reads its job key from this file (key_file=), so that
    the key is not on its command line, where every local user can read it."""
    directory = tempfile.mkdtemp(prefix="serene-key-")  # mode 0700
    path = os.path.join(directory, "job.key")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(f"{key:#010x}\n")
    return directory, path


def _remove_key_file(directory, path):
    for remove, target in ((os.unlink, path), (os.rmdir, directory)):
        try:
            remove(target)
        except OSError:
            pass


def _stop_all(ranks, grace_s=5.0):
    for p in ranks:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for p in ranks:
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python3 -m serene.launch",
        description="Start a Serene switch (unless --switch) and N ranks of a Python script.",
        epilog="Example: python3 -m serene.launch --nproc 4 --elements 79510 "
        "examples/train_fashion_mnist.py --steps 500",
    )
    parser.add_argument("--nproc", type=int, required=True, help="ranks to start (1..1024)")
    parser.add_argument("--elements", type=int, default=0,
                        help="model size of the job the launched switch creates "
                        "(required without --switch)")
    parser.add_argument("--policy", default="sync",
                        help="the job's policy: sync, ssp:W, async or quorum:K:L (default sync)")
    parser.add_argument("--row", type=int, default=0,
                        help="values per row (default: the switch's)")
    parser.add_argument("--job", type=int, default=1, help="job id (default 1)")
    parser.add_argument("--key-file", default=None,
                        help="file (mode 0600) holding the job key of a running switch "
                        "(--switch); or the environment variable SERENE_KEY. A launched switch "
                        "gets a fresh key drawn from getrandom(2)")
    parser.add_argument("--key", type=lambda s: int(s, 0), default=None,
                        help="job key on the command line, where every local user can read it: "
                        "for tests; prefer --key-file or SERENE_KEY")
    parser.add_argument("--switch", default=None,
                        help="HOST:PORT of a running switch that already has the job; "
                        "no switch is started")
    parser.add_argument("--switch-bin", default=None, help="the serene-switch binary to start")
    parser.add_argument("--switch-log", default=None,
                        help="file for the started switch's log (default: a temporary file)")
    parser.add_argument("--timeout", type=float, default=3600.0,
                        help="seconds before the whole job is stopped as hung (default 3600)")
    parser.add_argument("--no-python", action="store_true",
                        help="run `script` as a program, not a Python script (e.g. "
                        "build/bin/serene-train, which reads the same variables)")
    parser.add_argument("script", help="the Python script (or, with --no-python, the program) "
                        "every rank runs")
    parser.add_argument("script_args", nargs=argparse.REMAINDER,
                        help="arguments passed to the script")
    args = parser.parse_args(argv)
    if not 1 <= args.nproc <= 1024:
        parser.error(f"--nproc must be in 1..1024, got {args.nproc}")
    if args.switch is None and args.elements <= 0:
        parser.error("--elements is required when the launcher starts the switch "
                     "(serene.torch.flat_size(model) gives a module's)")
    if args.timeout <= 0:
        parser.error(f"--timeout must be > 0, got {args.timeout}")
    if args.no_python:
        program = shutil.which(args.script)
        if program is None:
            parser.error(f"no such program: {args.script}")
        args.command = [program]
    elif not Path(args.script).is_file():
        parser.error(f"no such script: {args.script}")
    else:
        args.command = [sys.executable, args.script]
    if args.key is not None and not 0 <= args.key < 2**32:
        parser.error(f"--key must be a 32-bit value, got {args.key}")
    if args.key is not None and args.key_file is not None:
        parser.error("give the job key once: --key-file or --key, not both")
    if args.key is not None:
        _log("warning: the job key is on the command line, where every local user can read it "
             "(/proc/PID/cmdline); use --key-file FILE (mode 0600) or SERENE_KEY instead")
    if args.key_file is not None:
        args.key = read_key_file(args.key_file, parser.error)
    elif args.key is None and os.environ.get("SERENE_KEY"):
        try:
            args.key = int(os.environ["SERENE_KEY"], 0)
        except ValueError:
            parser.error("SERENE_KEY: expected a 32-bit decimal or 0x-hex number")
    return args


def read_key_file(path, error):
    """The key in a private key file, as serene-switch and serene-train read it."""
    try:
        mode = os.stat(path).st_mode
        text = Path(path).read_text().strip()
    except OSError as e:
        error(f"--key-file: cannot read key file '{path}': {e.strerror}")
    if mode & 0o077:
        error(f"--key-file: key file '{path}' has mode {mode & 0o7777:04o}: group or others can "
              f"read or write it, so it is no secret; make it private to its owner: "
              f"chmod 600 {path}")
    try:
        key = int(text, 0)
    except ValueError:
        key = 0
    if not 0 < key < 2**32:
        error(f"--key-file: key file '{path}' does not hold a non-zero 32-bit key")
    return key


def run(args):
    """Runs the job; returns the exit code."""
    switch = None
    ranks = []
    started = time.monotonic()
    try:
        if args.switch is None:
            key = args.key if args.key is not None else draw_key()
            key_dir, key_path = write_private_key_file(key)
            spec = (f"id={args.job},workers={args.nproc},elements={args.elements},"
                    f"key_file={key_path},policy={args.policy}")
            if args.row:
                spec += f",row={args.row}"
            log_path = args.switch_log or tempfile.mkstemp(prefix="serene-switch-", suffix=".log")[1]
            try:
                switch = SwitchProcess(_find_switch_binary(args.switch_bin), spec, log_path)
            finally:
                _remove_key_file(key_dir, key_path)  # read at start-up; the ranks get SERENE_KEY
            address = switch.address
            _log(f"switch {address} (job {args.job}: {args.nproc} workers, {args.elements} "
                 f"elements, policy {args.policy}; log {log_path})")
        else:
            key = args.key if args.key is not None else 0
            address = args.switch
        env = dict(os.environ)
        env.update(SERENE_SWITCH=address, SERENE_JOB=str(args.job), SERENE_KEY=str(key),
                   WORLD_SIZE=str(args.nproc))
        _log(f"starting {args.nproc} rank(s) of {args.script}")
        for rank in range(args.nproc):
            env_rank = dict(env, RANK=str(rank), LOCAL_RANK=str(rank))
            ranks.append(subprocess.Popen([*args.command, *args.script_args], env=env_rank))

        deadline = started + args.timeout
        while True:
            codes = [p.poll() for p in ranks]
            failed = [(r, c) for r, c in enumerate(codes) if c not in (None, 0)]
            if failed:
                rank, code = failed[0]
                _log(f"rank {rank} exited with code {code}; stopping the other ranks")
                _stop_all(ranks)
                return code if code > 0 else 1
            if all(c == 0 for c in codes):
                _log(f"all {args.nproc} rank(s) finished in {time.monotonic() - started:.1f} s")
                return 0
            if switch is not None and not switch.alive():
                _log(f"the switch exited (code {switch.process.returncode}); stopping the ranks; "
                     f"its log: {switch.log_path}")
                _stop_all(ranks)
                return 1
            if time.monotonic() > deadline:
                _log(f"--timeout {args.timeout:g} s passed with ranks still running; stopping them")
                _stop_all(ranks)
                return 1
            time.sleep(0.05)
    except LaunchError as e:
        _log(str(e))
        _stop_all(ranks)
        return 2
    except KeyboardInterrupt:
        _log("interrupted; stopping the ranks")
        _stop_all(ranks)
        return 130
    finally:
        if switch is not None:
            switch.stop()


def main(argv=None):
    # SIGTERM to the launcher stops the job as Ctrl-C does.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    return run(parse_args(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
