"""Fixtures for the serene package's tests: a real serene-switch process.

ctest sets PYTHONPATH (build/python), SERENE_BIN_DIR (build/bin) and
SERENE_SOURCE_DIR; run by hand the same way:
  PYTHONPATH=build/python SERENE_BIN_DIR=build/bin /usr/bin/python3 -m pytest python/tests
"""

import os
import tempfile
import threading
from pathlib import Path

import pytest

from serene.launch import SwitchProcess, _find_switch_binary

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
