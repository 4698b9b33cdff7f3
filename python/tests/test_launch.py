"""python3 -m serene.launch: N real rank processes and a real switch; a
failing rank, a hung job and bad flags end it with a clear message."""

import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

RANK_SCRIPT = textwrap.dedent(
    """
    import os, sys
    import numpy as np
    import serene
    c = serene.Client.from_env(deadline_s=30)
    info = c.join()
    n = info.workers
    assert n == int(os.environ["WORLD_SIZE"])
    model = np.zeros(info.elements, np.float32)
    c.initialize(model)
    for it in range(4):
        c.pull(model)
        assert np.all(model == it * n), (it, model[:3])
        c.push(np.ones(info.elements, np.float32))
        c.clock()
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "fail" and c.rank == 1:
        sys.exit(3)
    if mode in ("fail", "hang"):
        c.push(np.ones(info.elements, np.float32))
        c.clock()  # waits for the failed rank until the launcher stops it
    c.leave()
    sys.stdout.write(f"rank {c.rank} ok\\n")
    sys.stdout.flush()
    """
)


def launch(tmp_path, *args, timeout=120):
    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT)
    argv = [sys.executable, "-m", "serene.launch", *args]
    argv = [a if a != "SCRIPT" else str(script) for a in argv]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=os.environ)


def test_launches_a_switch_and_the_ranks(tmp_path):
    r = launch(tmp_path, "--nproc", "3", "--elements", "500", "SCRIPT")
    assert r.returncode == 0, r.stderr
    assert sorted(line for line in r.stdout.splitlines() if "ok" in line) == [
        "rank 0 ok", "rank 1 ok", "rank 2 ok"]
    assert "all 3 rank(s) finished" in r.stderr


def test_a_failing_rank_stops_the_others(tmp_path):
    r = launch(tmp_path, "--nproc", "3", "--elements", "100", "SCRIPT", "fail")
    assert r.returncode == 3, r.stderr
    assert "rank 1 exited with code 3" in r.stderr


def test_timeout_stops_a_hung_job(tmp_path):
    # Ranks that never finish (their own code hangs): --timeout ends the job.
    script = tmp_path / "sleep.py"
    script.write_text("import time\ntime.sleep(600)\n")
    r = subprocess.run([sys.executable, "-m", "serene.launch", "--nproc", "2", "--elements", "10",
                        "--timeout", "2", str(script)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert "--timeout 2 s passed" in r.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--nproc", "0", "--elements", "10", "SCRIPT"], "--nproc must be in 1..1024"),
        (["--nproc", "2", "SCRIPT"], "--elements is required"),
        (["--nproc", "2", "--elements", "10", "--timeout", "-1", "SCRIPT"], "--timeout must be"),
        (["--nproc", "2", "--elements", "10", "missing.py"], "no such script"),
        (["--nproc", "2", "--elements", "10", "--policy", "bogus", "SCRIPT"],
         "serene-switch did not start"),
    ],
)
def test_bad_flags_are_refused(tmp_path, args, message):
    r = launch(tmp_path, *args)
    assert r.returncode != 0
    assert message in r.stderr


def test_no_python_runs_a_program(tmp_path):
    # A program that is not Python, given the same variables.
    r = launch(tmp_path, "--nproc", "2", "--elements", "10", "--no-python", "sh", "-c",
               'echo "rank $RANK of $WORLD_SIZE at $SERENE_SWITCH job $SERENE_JOB"')
    assert r.returncode == 0, r.stderr
    lines = sorted(r.stdout.splitlines())
    assert lines[0].startswith("rank 0 of 2 at 127.0.0.1:") and lines[1].startswith("rank 1 of 2")
    r = launch(tmp_path, "--nproc", "2", "--elements", "10", "--no-python", "no-such-program-x")
    assert r.returncode != 0 and "no such program" in r.stderr


def test_kill_9_of_the_launcher_stops_its_switch_and_ranks(tmp_path):
    # Ranks that train until told otherwise, with a 3 s client deadline.
    script = tmp_path / "forever.py"
    script.write_text(textwrap.dedent(
        """
        import os, sys
        import numpy as np
        import serene
        open(sys.argv[1] + "/pid" + os.environ["RANK"], "w").write(str(os.getpid()))
        c = serene.Client.from_env(deadline_s=3)
        info = c.join()
        model = np.zeros(info.elements, np.float32)
        c.initialize(model)
        while True:
            c.pull(model)
            c.push(np.zeros(info.elements, np.float32))
            c.clock()
        """))
    launcher = subprocess.Popen(
        [sys.executable, "-m", "serene.launch", "--nproc", "2", "--elements", "10",
         str(script), str(tmp_path)], stderr=subprocess.PIPE, text=True)
    address = None
    for line in launcher.stderr:
        if line.startswith("serene.launch: switch "):
            address = line.split()[2]
        if "starting 2 rank(s)" in line:
            break
    assert address is not None
    pid_files = [tmp_path / "pid0", tmp_path / "pid1"]
    deadline = time.monotonic() + 30
    while not all(p.exists() and p.read_text() for p in pid_files):
        assert time.monotonic() < deadline, "the ranks did not start"
        time.sleep(0.05)
    time.sleep(0.5)  # the ranks train
    launcher.kill()
    launcher.wait()
    port = int(address.rsplit(":", 1)[1])

    def switch_gone():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            try:
                s.bind(("127.0.0.1", port))
                return True
            except OSError:
                return False

    def alive(pid):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        # A zombie (exited, parent gone) counts as gone.
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"

    pids = [int(p.read_text()) for p in pid_files]
    deadline = time.monotonic() + 30
    while not switch_gone() or any(alive(p) for p in pids):
        assert time.monotonic() < deadline, "the switch or a rank outlived the killed launcher"
        time.sleep(0.1)
