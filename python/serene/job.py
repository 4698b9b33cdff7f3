"""serene.job: the job of ranks that torchrun, Slurm or mpirun started.

    job = serene.job.Job.from_env(elements=flat_size)   # every rank calls it
    client = job.client                                  # joined
    ...
    job.close()                                          # also at exit

What a rank needs (docs/python.md, "torchrun, Slurm and mpirun"):

- Its rank and the world size: the default process group's if one is
  initialized, else RANK/WORLD_SIZE (torchrun), OMPI_COMM_WORLD_RANK/SIZE
  (mpirun), PMI_RANK/SIZE, SLURM_PROCID/SLURM_NTASKS.
- SERENE_SWITCH, the switch's data-plane address.
- A job. With SERENE_JOB and SERENE_KEY in the environment (serene.launch
  sets them) the ranks join that job. Otherwise rank 0 creates one through
  the switch's runtime API (`serene-ctl job create`; SERENE_CONTROL, default
  the switch's host and port + 1; the token from SERENE_TOKEN_FILE); the switch
  draws the key from the OS's entropy. The job id and key reach the other
  ranks through the launcher's rendezvous store (torchrun's TCPStore at
  MASTER_ADDR:MASTER_PORT, or the process group's), never a command line.
- The job is deleted when the ranks close it (close(), or at exit), and when
  rank 0 dies: rank 0 starts a guard process that holds a pipe from it and
  deletes the job once the pipe closes, which the kernel does when rank 0
  exits, however it exits (kill -9 included).
"""

import atexit
import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

from ._serene import Client
from .launch import LaunchError, find_binary

__all__ = ["Job", "JobError", "rank_and_world"]

# Pairs of (rank, world size) variables, in the order they are believed.
_RANK_VARIABLES = (
    ("RANK", "WORLD_SIZE"),
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    ("PMI_RANK", "PMI_SIZE"),
    ("SLURM_PROCID", "SLURM_NTASKS"),
)
_STORE_TIMEOUT_S = 300.0  # how long a rank waits for rank 0's job in the store
_LEAVE_WAIT_S = 60.0      # how long rank 0 waits for the others to leave before deleting


_jobs_made = {}  # name -> jobs this process made from the store so far


class JobError(RuntimeError):
    """A job that cannot be set up; the message says why and what to do."""


def _process_group():
    try:
        import torch.distributed as dist
    except ImportError:
        return None
    if dist.is_available() and dist.is_initialized():
        return dist
    return None


def rank_and_world():
    """(rank, world size) of this process: the process group's, else the launcher's variables."""
    dist = _process_group()
    if dist is not None:
        return dist.get_rank(), dist.get_world_size()
    for rank_var, world_var in _RANK_VARIABLES:
        if rank_var in os.environ and world_var in os.environ:
            try:
                rank, world = int(os.environ[rank_var]), int(os.environ[world_var])
            except ValueError:
                raise JobError(f"{rank_var}={os.environ[rank_var]!r} {world_var}="
                               f"{os.environ[world_var]!r}: expected two integers") from None
            if not 0 <= rank < world:
                raise JobError(f"{rank_var}={rank} is not a rank of {world_var}={world}")
            return rank, world
    raise JobError("no rank in the environment: start the script with torchrun, mpirun or srun "
                   "(or set RANK and WORLD_SIZE)")


def _rendezvous_store(rank, world):
    """The store the launcher set up, wrapped so Serene's keys have their own prefix."""
    import torch.distributed as dist

    timeout = datetime.timedelta(seconds=_STORE_TIMEOUT_S)
    group = _process_group()
    if group is not None:
        store = group.distributed_c10d._get_default_store()
    else:
        host, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
        if not host or not port:
            raise JobError(
                "no rendezvous store to pass the job key through: torchrun sets MASTER_ADDR and "
                "MASTER_PORT; under Slurm or mpirun export them (the first rank's host and a free "
                "port) or call torch.distributed.init_process_group() first")
        if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True":
            # torchrun's agent serves the store; every rank is a client (as torch's env:// does).
            store = dist.TCPStore(host, int(port), world, False, timeout)
        else:
            # Rank 0 serves it, multi-tenant: a later init_process_group(env://)
            # in this process shares the same server.
            store = dist.TCPStore(host, int(port), world, rank == 0, timeout, multi_tenant=True)
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    return dist.PrefixStore(f"serene/attempt_{attempt}", store)


def _control_address(switch):
    control = os.environ.get("SERENE_CONTROL")
    if control:
        return control
    host, _, port = switch.rpartition(":")
    try:
        return f"{host}:{int(port) + 1}"
    except ValueError:
        raise JobError(f"SERENE_SWITCH={switch!r}: expected host:port, "
                       "e.g. 127.0.0.1:7000") from None


def _serene_ctl(control, args, timeout_s=10.0):
    """Runs serene-ctl (the token comes from SERENE_TOKEN_FILE, which it reads);
    returns stdout; JobError with its message on failure."""
    try:
        ctl = find_binary("serene-ctl")
    except LaunchError as e:
        raise JobError(str(e)) from None
    done = subprocess.run([str(ctl), "--control", control, *args], capture_output=True,
                          text=True, timeout=timeout_s)
    if done.returncode != 0:
        message = done.stderr.strip().removeprefix("serene-ctl: ")
        raise JobError(f"`serene-ctl {' '.join(args[:2])}` against the switch's runtime API at "
                       f"{control} failed: {message}")
    return done.stdout


def _start_guard(control, job_id):
    """A process that deletes the job when the pipe from this process closes."""
    guard = Path(__file__).with_name("_job_guard.py")
    ctl = find_binary("serene-ctl")
    return subprocess.Popen(
        [sys.executable, str(guard), str(ctl), control, str(job_id)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        start_new_session=True,  # Ctrl-C to the script's process group must not stop it
    )


class Job:
    """This rank's part of a Serene job: a joined `client`; rank 0 may own the job."""

    def __init__(self, client, job_id, rank, world, store=None, owner=None, policy=None):
        self.client = client
        self.id = job_id
        self.policy = policy  # as created ("sync", "ssp:4", "adaptive.lua"); None: not ours
        self.rank = rank
        self.world_size = world
        self._store = store  # rank 0 may serve it: kept while the job lives
        self._owner = owner  # rank 0 of a job it created: dict(control, id, guard, controller)
        self._closed = False
        atexit.register(self.close)

    @property
    def created(self) -> bool:
        """Rank 0 created this job (and deletes it at close)."""
        return self._owner is not None

    @classmethod
    def from_env(cls, elements, *, policy=None, evict_after=None, name="job", **client_options):
        """Joins (or, rank 0, creates then joins) a job of `elements` values
        for the ranks of this launch. `policy` (default $SERENE_POLICY, else
        sync): sync, ssp:W, async, quorum:K:L, or a policy script (FILE.lua,
        run by a controller rank 0 starts). `evict_after` ("10s", "0" = never;
        default $SERENE_EVICT_AFTER, else the switch's 10 s) applies to a job
        this creates; SERENE_ROW sets its row width. `name` keeps two
        jobs of one script apart. `client_options` go to serene.Client."""
        rank, world = rank_and_world()
        switch = os.environ.get("SERENE_SWITCH")
        if not switch:
            raise JobError("SERENE_SWITCH is not set: set it to the switch's data-plane address, "
                           "e.g. SERENE_SWITCH=127.0.0.1:7000 torchrun --nproc_per_node 2 train.py")
        options = dict(switch=switch, rank=rank, world_size=world)
        options.update(client_options)
        if os.environ.get("SERENE_JOB") and os.environ.get("SERENE_KEY"):
            # The job exists (serene.launch, or the user's own): join it.
            client = Client.from_env(**options)
            job = cls(client, int(os.environ["SERENE_JOB"], 0), rank, world)
            job._join(elements)
            return job

        store = _rendezvous_store(rank, world)
        # Every rank makes the same jobs in the same order: the n-th job of a
        # name has a key of its own, so no rank reads an earlier job's entry.
        _jobs_made[name] = _jobs_made.get(name, 0) + 1
        name = f"{name}/{_jobs_made[name]}"
        owner = None
        if rank == 0:
            try:
                owner = cls._create(switch, world, elements, policy, evict_after)
            except BaseException as e:
                store.set(f"{name}/job", json.dumps(dict(error=str(e))))
                raise
            store.set(f"{name}/job", json.dumps(dict(id=owner["id"], key=owner["key"],
                                                     policy=owner["policy"])))
            job_id, key, policy = owner["id"], owner["key"], owner["policy"]
        else:
            try:
                published = json.loads(store.get(f"{name}/job"))
            except RuntimeError as e:
                raise JobError(f"rank 0 did not publish the Serene job within "
                               f"{_STORE_TIMEOUT_S:g} s ({e}); did rank 0 start?") from None
            if "error" in published:
                raise JobError(f"rank 0 could not create the Serene job: {published['error']}")
            job_id, key, policy = published["id"], published["key"], published["policy"]
        client = Client.from_env(job=job_id, key=key, **options)
        job = cls(client, job_id, rank, world, store=store, owner=owner,
                  policy=policy)
        job._join(elements)
        return job

    @staticmethod
    def _create(switch, world, elements, policy, evict_after):
        control = _control_address(switch)
        policy = policy or os.environ.get("SERENE_POLICY") or "sync"
        script = policy if policy.endswith(".lua") else None
        if script is not None and not os.path.isfile(script):
            raise JobError(f"policy script {script} does not exist")
        args = ["job", "create", "--workers", str(world), "--elements", str(elements),
                "--policy", "sync" if script else policy, "--json"]
        row = os.environ.get("SERENE_ROW")
        if row:
            args += ["--row", row]
        if evict_after is None:
            evict_after = os.environ.get("SERENE_EVICT_AFTER")
        if evict_after is not None:
            args += ["--evict-after", str(evict_after)]
        created = None
        for _ in range(8):  # another job may take the lowest free id meanwhile
            try:
                created = json.loads(_serene_ctl(control, args))
                break
            except JobError as e:
                if "already exists" not in str(e).lower():
                    raise
        if created is None:
            raise JobError(f"could not find a free job id on {control}")
        owner = dict(control=control, id=int(created["id"]), key=int(created["key"]),
                     controller=None, policy=policy)
        owner["guard"] = _start_guard(control, owner["id"])
        if script is not None:
            ctl = find_binary("serene-ctl")
            owner["controller"] = subprocess.Popen(
                [str(ctl), "--control", control, "control", str(owner["id"]), script],
                stdout=subprocess.DEVNULL, start_new_session=True)
        return owner

    def _join(self, elements):
        info = self.client.join()
        if info.elements != elements:
            raise JobError(f"the job holds {info.elements} elements but this rank has {elements}; "
                           f"create the job with elements={elements}")
        if info.workers != self.world_size:
            raise JobError(f"the job has {info.workers} ranks but this launch has "
                           f"{self.world_size}; create it with workers={self.world_size}")

    def _others_still_in(self):
        """Whether another rank may still use the job: it is live (has not left
        and was not evicted) and has sent something in the last 3 s."""
        try:
            telemetry = json.loads(_serene_ctl(self._owner["control"],
                                               ["telemetry", str(self.id), "--json"]))
        except (JobError, ValueError, subprocess.TimeoutExpired):
            return False
        return any(r.get("live") and 0 <= int(r.get("silent_ns", -1)) < 3_000_000_000
                   for r in telemetry.get("ranks", []) if r.get("rank", 0) != self.rank)

    def close(self):
        """Leaves the job; rank 0 of a job it created waits (up to 60 s) while
        another rank is still in it (live and not silent for 3 s), then deletes
        it. Runs at exit too."""
        if self._closed:
            return
        self._closed = True
        try:
            if self.client.joined:  # also after a finish: the switch then sees it gone
                self.client.leave()
        except Exception:  # noqa: BLE001  (the job may be gone already)
            pass
        if self._owner is None:
            return
        deadline = time.monotonic() + _LEAVE_WAIT_S
        while time.monotonic() < deadline and self._others_still_in():
            time.sleep(0.1)
        controller = self._owner["controller"]
        if controller is not None:  # stopped first: SIGTERM ends it cleanly
            controller.terminate()
            try:
                controller.wait(timeout=5)
            except subprocess.TimeoutExpired:
                controller.kill()
        guard = self._owner["guard"]
        guard.stdin.close()  # the guard deletes the job
        try:
            guard.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
