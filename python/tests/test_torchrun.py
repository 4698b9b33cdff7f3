"""torchrun with nothing but SERENE_SWITCH (and the API's address and token
file): rank 0 creates the job through the runtime API, the key goes through
torchrun's store, the job is deleted at the end and when a rank dies. And bad
use: a job of the wrong size, no switch, a wrong token, the hook under SSP."""

import json
import os
import subprocess
import sys

import pytest
import torch

import serene
import serene.torch as st
from conftest import SOURCE_DIR, free_port, serene_ctl
from serene.job import JobError, rank_and_world

RANK_SCRIPT = str(SOURCE_DIR / "python" / "tests" / "ddp_rank.py")


def torchrun(control_switch, tmp_path, mode, extra=()):
    out = tmp_path / mode
    out.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SERENE_JOB", "SERENE_KEY", "RANK", "WORLD_SIZE", "MASTER_"))}
    env.update(control_switch["env"])
    # Debian 12's torch 1.13 under Python 3.11 cannot parse torchrun's default
    # --redirects 0 --tee 0 (docs/python.md); 2 (stderr) is parsed right.
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
               "--redirects", "2", "--tee", "2",
               "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
               RANK_SCRIPT, "--mode", mode, "--steps", "3", "--out", str(out), *extra]
    # The key is never on a command line: nothing here knows it.
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)
    return out, done


def jobs(control_switch):
    listed = serene_ctl(control_switch, "jobs")
    assert listed.returncode == 0, listed.stderr
    return listed.stdout


@pytest.mark.parametrize("mode", ["hook", "optimizer"])
def test_torchrun_two_ranks_end_to_end(control_switch, tmp_path, mode):
    out, done = torchrun(control_switch, tmp_path, mode)
    assert done.returncode == 0, done.stderr[-4000:]
    r0, r1 = (torch.load(out / f"rank{r}.pt") for r in range(2))
    for a, b in zip(r0["params"], r1["params"]):
        assert torch.equal(a, b)
    assert "no jobs" in jobs(control_switch)


def test_torchrun_a_killed_rank_stops_the_run_and_the_job_is_deleted(control_switch, tmp_path):
    out, done = torchrun(control_switch, tmp_path, "hook", extra=["--die-at", "2"])
    assert done.returncode != 0
    assert "ddp_rank.py FAILED" in done.stderr and "Signal 9" in done.stderr, done.stderr[-4000:]
    assert "no jobs" in jobs(control_switch)


@pytest.fixture
def one_rank(monkeypatch, control_switch):
    """This process as rank 0 of 1, Slurm-style, against the fixture's switch."""
    for name in ("SERENE_JOB", "SERENE_KEY", "TORCHELASTIC_USE_AGENT_STORE", "SERENE_POLICY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(free_port()))
    monkeypatch.setenv("SERENE_DEADLINE_S", "5")
    for name, value in control_switch["env"].items():
        monkeypatch.setenv(name, value)
    return control_switch


def model():
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))


def test_hook_refuses_a_job_of_the_wrong_size(one_rank, monkeypatch):
    n = st.flat_size(model())
    created = serene_ctl(one_rank, "job", "create", "--workers", "1", "--elements", str(n + 1),
                         "--json")
    assert created.returncode == 0, created.stderr
    job = json.loads(created.stdout)
    monkeypatch.setenv("SERENE_JOB", str(job["id"]))
    monkeypatch.setenv("SERENE_KEY", str(job["key"]))
    with pytest.raises(JobError, match=f"holds {n + 1} elements but this rank has {n}; "
                       f"create the job with elements={n}"):
        st.HookState(model())


def test_hook_refuses_ssp(one_rank, monkeypatch):
    monkeypatch.setenv("SERENE_POLICY", "ssp:2")
    with pytest.raises(JobError, match="needs a SYNC job, not 'ssp:2'.*DistributedOptimizer"):
        st.HookState(model())
    assert "no jobs" in jobs(one_rank)


def test_missing_switch(one_rank, monkeypatch):
    monkeypatch.delenv("SERENE_SWITCH")
    with pytest.raises(JobError, match="SERENE_SWITCH is not set"):
        st.DistributedOptimizer(torch.optim.SGD(model().parameters(), lr=0.1))
    # A switch that is not there: its runtime API cannot be reached.
    monkeypatch.setenv("SERENE_SWITCH", "127.0.0.1:1")
    monkeypatch.delenv("SERENE_CONTROL")
    with pytest.raises(JobError, match="runtime API at 127.0.0.1:2 failed: cannot reach"):
        st.DistributedOptimizer(torch.optim.SGD(model().parameters(), lr=0.1))


def test_wrong_token(one_rank, monkeypatch, tmp_path):
    wrong = tmp_path / "wrong.token"
    fd = os.open(wrong, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write("not-the-token-of-this-switch\n")
    monkeypatch.setenv("SERENE_TOKEN_FILE", str(wrong))
    with pytest.raises(JobError, match="unauthenticated: wrong token"):
        st.HookState(model())


def test_one_rank_job_lifecycle_in_process(one_rank):
    net = model()
    opt = st.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.5))
    assert opt.serene_job.created and isinstance(opt, torch.optim.SGD)
    assert f"  {opt.serene_job.id}  " in jobs(one_rank).splitlines()[1]
    before = torch.cat([p.detach().reshape(-1) for p in net.parameters()])
    sum(p.sum() for p in net.parameters()).backward()  # gradient 1 everywhere
    opt.step()
    after = torch.cat([p.detach().reshape(-1) for p in net.parameters()])
    torch.testing.assert_close(after, before - 0.5, atol=1e-6, rtol=0)
    assert opt.steps == 1 and opt.comm_s > 0 and not opt.finished
    opt.close()
    assert "no jobs" in jobs(one_rank)
    with pytest.raises(TypeError, match="torch.optim.Optimizer"):
        st.DistributedOptimizer(net)
    assert serene.Client  # the package is whole


@pytest.mark.parametrize("variables", [
    dict(RANK="1", WORLD_SIZE="3"),
    dict(OMPI_COMM_WORLD_RANK="1", OMPI_COMM_WORLD_SIZE="3"),
    dict(PMI_RANK="1", PMI_SIZE="3"),
    dict(SLURM_PROCID="1", SLURM_NTASKS="3"),
])
def test_rank_and_world_from_each_launcher(monkeypatch, variables):
    for name in ("RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                 "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    assert rank_and_world() == (1, 3)


def test_no_rank_in_the_environment(monkeypatch):
    for name in ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(JobError, match="no rank in the environment: start the script with "
                       "torchrun"):
        rank_and_world()


def test_no_rendezvous_store(one_rank, monkeypatch):
    monkeypatch.delenv("MASTER_ADDR")
    with pytest.raises(JobError, match="no rendezvous store to pass the job key through: "
                       "torchrun sets MASTER_ADDR and MASTER_PORT"):
        st.DistributedOptimizer(torch.optim.SGD(model().parameters(), lr=0.1))


def test_optimizer_state_dict_moves_between_wrapped_and_plain(one_rank):
    net = model()
    opt = st.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9))
    sum(p.sum() for p in net.parameters()).backward()
    opt.step()
    saved = opt.state_dict()
    opt.close()
    plain = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    plain.load_state_dict(saved)  # a checkpoint of the wrapped optimizer, loaded unwrapped
    assert plain.state_dict()["param_groups"] == saved["param_groups"]
    for key, state in saved["state"].items():
        assert torch.equal(plain.state_dict()["state"][key]["momentum_buffer"],
                           state["momentum_buffer"])
    # And back: a plain optimizer's state survives wrapping.
    again = st.DistributedOptimizer(plain)
    assert torch.equal(next(iter(again.state.values()))["momentum_buffer"],
                       next(iter(saved["state"].values()))["momentum_buffer"])
    again.close()
