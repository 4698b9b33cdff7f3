"""The DDP hook and DistributedOptimizer on real ranks: two processes started
as Slurm or mpirun would (RANK, WORLD_SIZE, MASTER_ADDR/PORT), a real switch
whose runtime API has a token, rank 0 creating the job through it. Every
rank's model is bit-identical after every step under SYNC; the hook's mean
gradient equals gloo's allreduce within the fixed-point error; the job is
deleted when the ranks end."""

import json
import os

import pytest
import torch

from conftest import SOURCE_DIR, serene_ctl, start_rank_processes
from ddp_rank import make_model

RANK_SCRIPT = str(SOURCE_DIR / "python" / "tests" / "ddp_rank.py")
SCALE = 2.0**24


def run(control_switch, tmp_path, mode, n=2, steps=4, extra=(), env=None):
    out = tmp_path / mode
    out.mkdir()
    procs = start_rank_processes(
        n, [RANK_SCRIPT, "--mode", mode, "--steps", str(steps), "--out", str(out), *extra],
        dict(control_switch["env"], **(env or {})))
    results = [p.communicate(timeout=120) + (p.returncode,) for p in procs]
    return out, results


def load(out, n=2):
    return [torch.load(out / f"rank{r}.pt") for r in range(n)]


def assert_ok(results):
    for rank, (stdout, stderr, code) in enumerate(results):
        assert code == 0, f"rank {rank} exited {code}:\n{stderr[-3000:]}"


def assert_no_jobs(control_switch):
    listed = serene_ctl(control_switch, "jobs")
    assert listed.returncode == 0, listed.stderr
    assert "no jobs" in listed.stdout, listed.stdout


@pytest.mark.parametrize("mode", ["hook", "optimizer"])
def test_sync_models_are_bit_identical_on_every_rank_after_every_step(control_switch, tmp_path,
                                                                       mode):
    out, results = run(control_switch, tmp_path, mode)
    assert_ok(results)
    r0, r1 = load(out)
    # Ranks start from different weights (seeded per rank): rank 0's win.
    assert len(r0["params"]) == 5
    for step, (a, b) in enumerate(zip(r0["params"], r1["params"])):
        assert torch.equal(a, b), f"{mode}: the ranks' models differ after step {step}"
    assert not torch.equal(r0["params"][0], r0["params"][-1])  # it trained
    if mode == "hook":
        for step, (a, b) in enumerate(zip(r0["grads"], r1["grads"])):
            assert torch.equal(a, b), f"the ranks' mean gradients differ at step {step + 1}"
    # The LR scheduler stepped the wrapped optimizer (0.1 halved twice in 4 steps),
    # and state_dict() is the wrapped optimizer's.
    assert r0["lr"] == pytest.approx(0.025) and r1["lr"] == pytest.approx(0.025)
    assert r0["state_dict_keys"] == ["param_groups", "state"]
    assert_no_jobs(control_switch)  # rank 0 deleted the job it created


def test_hook_gives_gloos_allreduce_within_the_fixed_point_error(control_switch, tmp_path):
    n = 2
    gloo_out, gloo_results = run(control_switch, tmp_path, "gloo", steps=3)
    hook_out, hook_results = run(control_switch, tmp_path, "hook", steps=3)
    assert_ok(gloo_results)
    assert_ok(hook_results)
    gloo, hook = load(gloo_out)[0], load(hook_out)[0]
    # Same initial model (DDP broadcasts rank 0's), same data: the first mean
    # gradient differs only by rounding each rank's g/N to 2^-24.
    torch.testing.assert_close(hook["params"][0], gloo["params"][0], atol=0, rtol=0)
    bound = n * 0.5 / SCALE + 1e-7
    diff = (hook["grads"][0] - gloo["grads"][0]).abs().max().item()
    assert diff <= bound, f"first mean gradient differs from gloo's by {diff} > {bound}"
    assert diff > 0 or torch.equal(hook["grads"][0], gloo["grads"][0])
    # Later steps train the same model up to that error's effect.
    for a, b in zip(hook["params"], gloo["params"]):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=0)


# bf16 parameters under DDP: gloo cannot broadcast them at DDP's construction
# (RuntimeError: Invalid scalar type), with or without the hook.
@pytest.mark.parametrize("mode,flags", [("hook", ["--autocast"]),
                                        ("optimizer", ["--autocast"]),
                                        ("optimizer", ["--dtype", "bfloat16"])])
def test_mixed_precision(control_switch, tmp_path, mode, flags):
    out, results = run(control_switch, tmp_path, mode, steps=3, extra=flags)
    assert_ok(results)
    r0, r1 = load(out)
    for a, b in zip(r0["params"], r1["params"]):
        assert torch.equal(a, b)
    assert not torch.equal(r0["params"][0], r0["params"][-1])


def test_a_killed_rank_ends_the_others_with_a_clear_error(control_switch, tmp_path):
    # The hook's job has eviction off: a step without rank 1 is no allreduce.
    out, results = run(control_switch, tmp_path, "hook", steps=6,
                       extra=["--die-at", "3", "--die-rank", "1"],
                       env=dict(SERENE_DEADLINE_S="3"))
    (_, err0, code0), (_, _, code1) = results
    assert code1 == -9
    assert code0 != 0
    assert "allreduce_hook: rank 0, step 3" in err0 and "Another rank has probably stopped" in err0
    assert_no_jobs(control_switch)  # the guard deleted it when rank 0 exited


def test_optimizer_goes_on_when_a_killed_rank_is_evicted(control_switch, tmp_path):
    out, results = run(control_switch, tmp_path, "optimizer", steps=5,
                       extra=["--die-at", "3", "--die-rank", "1"],
                       env=dict(SERENE_EVICT_AFTER="1s"))
    (_, err0, code0), (_, _, code1) = results
    assert code1 == -9
    assert code0 == 0, err0[-3000:]
    assert len(torch.load(out / "rank0.pt")["params"]) == 6
    assert_no_jobs(control_switch)


def test_rank_0_killed_deletes_the_job_and_the_others_fail_clearly(control_switch, tmp_path):
    out, results = run(control_switch, tmp_path, "optimizer", steps=6,
                       extra=["--die-at", "3", "--die-rank", "0"],
                       env=dict(SERENE_DEADLINE_S="3"))
    (_, _, code0), (_, err1, code1) = results
    assert code0 == -9
    assert code1 != 0 and "DistributedOptimizer: rank 1" in err1, err1[-3000:]
    assert_no_jobs(control_switch)
    assert os.path.exists(out)  # nothing else to check: the switch no longer has the job


def test_hook_refuses_a_step_released_before_every_rank_finished_it(control_switch, tmp_path):
    # A job that exists (SERENE_JOB, SERENE_KEY), made ASYNC behind the hook's
    # back: the first step the fast rank is released from alone is refused.
    n = sum(p.numel() for p in make_model(1).parameters())
    created = serene_ctl(control_switch, "job", "create", "--workers", "2", "--elements", str(n),
                         "--policy", "async", "--json")
    assert created.returncode == 0, created.stderr
    job = json.loads(created.stdout)
    out, results = run(control_switch, tmp_path, "hook", steps=4, extra=["--slow-rank", "1"],
                       env=dict(SERENE_JOB=str(job["id"]), SERENE_KEY=str(job["key"]),
                                SERENE_DEADLINE_S="3"))
    (_, err0, code0), _ = results
    assert code0 != 0
    assert "before every rank finished it" in err0 and "policy is not SYNC" in err0, err0[-3000:]
