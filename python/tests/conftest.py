"""Fixtures for the serene package's tests: a real serene-switch process.

ctest sets PYTHONPATH (build/python), SERENE_BIN_DIR (build/bin) and
SERENE_SOURCE_DIR; run by hand the same way:
  PYTHONPATH=build/python SERENE_BIN_DIR=build/bin /usr/bin/python3 -m pytest python/tests
"""

import os
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from serene.launch import SwitchProcess, _find_switch_binary, find_binary

SOURCE_DIR = Path(os.environ.get("SERENE_SOURCE_DIR", Path(__file__).resolve().parents[2]))


@pytest.fixture
def start_switch():
    """start_switch(workers, elements, policy="sync", key=0x5e7e, job=1, row=0) -> address."""
    started = []

    def start(workers, elements, policy="sync", key=0x5E7E, job=1, row=0, extra=""):
        spec = f"id={job},workers={workers},elements={elements},key={key},policy={policy}"
        if row:
            spec += f",row={row}"
        spec += extra
        log = tempfile.mkstemp(prefix="serene-test-switch-", suffix=".log")[1]
        switch = SwitchProcess(_find_switch_binary(None), spec, log)
        started.append(switch)
        return switch.address

    yield start
    for s in started:
        s.stop()


TOKEN = "serene-test-token-0123456789"


@pytest.fixture
def control_switch(tmp_path):
    """A serene-switch with no job and its runtime API on a free loopback port,
    with a token: a dict of `switch` (data-plane address), `control` (the
    API's address), `token_file` (mode 0600), `env` (what a rank needs beside
    its rank: SERENE_SWITCH, SERENE_CONTROL, SERENE_TOKEN_FILE) and `process`."""
    token_file = tmp_path / "api.token"
    fd = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(TOKEN + "\n")
    log = tmp_path / "switch.log"
    switch = SwitchProcess(_find_switch_binary(None), None, str(log), control="127.0.0.1:0",
                           token_file=token_file)
    assert switch.control_address, log.read_text()
    env = dict(SERENE_SWITCH=switch.address, SERENE_CONTROL=switch.control_address,
               SERENE_TOKEN_FILE=str(token_file))
    yield dict(switch=switch.address, control=switch.control_address, token_file=token_file,
               env=env, process=switch)
    switch.stop()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serene_ctl(control_switch, *args):
    """Runs serene-ctl against the fixture's switch; returns the CompletedProcess."""
    ctl = find_binary("serene-ctl")
    env = dict(os.environ, SERENE_TOKEN_FILE=str(control_switch["token_file"]))
    return subprocess.run([str(ctl), "--control", control_switch["control"], *args],
                          capture_output=True, text=True, env=env, timeout=30)


def start_rank_processes(n, command, env):
    """Starts `command` n times as ranks 0..n-1 of one launch, as Slurm or mpirun
    would (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set; no torchrun agent).
    Returns the Popen objects (stdout and stderr piped, text)."""
    port = free_port()
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("SERENE_JOB", "SERENE_KEY", "TORCHELASTIC"))}
    base.update(env, WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    return [subprocess.Popen([sys.executable, *command], env=dict(base, RANK=str(r),
                             LOCAL_RANK=str(r)), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
            for r in range(n)]


def run_ranks(n, body, timeout_s=60):
    """Runs body(rank) for ranks 0..n-1, each in its own thread (the client
    releases the GIL while it waits); returns their results and re-raises the
    first error."""
    errors, results = [], [None] * n

    def wrap(rank):
        try:
            results[rank] = body(rank)
        except BaseException as e:  # noqa: BLE001  (re-raised below)
            errors.append(e)

    threads = [threading.Thread(target=wrap, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=timeout_s)
        assert not t.is_alive(), f"a rank thread did not finish within {timeout_s} s"
    if errors:
        raise errors[0]
    return results
