#!/usr/bin/python3
"""Raw results behind the docs' figures, and the tables made from them.

Every figure in docs/ that a run measures comes from records in docs/data/
(JSON lines, one record per run of a sweep, committed). Each record names the
commit, the CPU model, the cores, the kernel and the date it was measured on.
Tables in docs/*.md sit between markers

    <!-- generated: NAME -->
    ...
    <!-- /generated: NAME -->

and are made from the records by this script alone, so a table can always be
traced to its runs, and `tables --check` (a ctest test) fails when a table
differs from what its records give.

    evidence.py record-sim OUT --figure F --scenario S   # a serene-sim --seeds output -> docs/data/F.jsonl
    evidence.py record-experiment OUT --figure F --scenario S --seed N
    evidence.py record-comm OUT.jsonl                    # a scripts/comm_sweep.sh output -> docs/data/comm.jsonl
    evidence.py record-validation OUT/nN --scenario nN   # a scripts/sim_validation.sh output
    evidence.py record-time --part FIGURE:SCENARIO --started T [--quick]  # how long a part of reproduce.sh took
    evidence.py tables [--check]                         # rewrite (or check) every generated table
    evidence.py plots                                     # redraw the plots made from records (gnuplot)

A figure is the median of its seeds or runs with min and max; "met" means the
median meets the target.
"""
import argparse

from evidence_lib.comm import record_comm
from evidence_lib.durations import record_time
from evidence_lib.faults import record_faults
from evidence_lib.fuzz import record_fuzz
from evidence_lib.micro import record_bench
from evidence_lib.p4 import P4_CHECKS, record_p4
from evidence_lib.plots import plot_scale_sweep, plots
from evidence_lib.python_api import record_python_vs_cpp, record_pytorch
from evidence_lib.run_records import record_experiment, record_sim
from evidence_lib.sanitizers import record_sanitizers
from evidence_lib.scale import record_scale
from evidence_lib.soak import record_soak
from evidence_lib.tables import tables
from evidence_lib.validation import record_validation

# The subcommands: (name, help, function, [(flags, add_argument's keywords)]).
OUT = (("out",), {})
COMMANDS = [
    ("record-sim", "records a serene-sim --seeds output (or several: the parts of one sweep)",
     record_sim,
     [(("out",), dict(nargs="+")),
      (("--commit",), dict(help="the commit the sweep ran at, if not HEAD (a sweep recorded "
                           "after later commits that do not change what it measures)")),
      (("--figure",), dict(required=True)),
      (("--scenario",), dict(required=True)),
      (("--label",), dict(action="append",
                          help="record only the runs with this label (repeat for more; labels "
                          "may hold commas, as QUORUM(3,inf) does)")),
      (("--merge",), dict(action="store_true", help="keep the scenario's other records; "
                          "replace only the same seed and label")),
      (("--witness",), dict(help="a serene-sim output of runs the merge keeps, simulated "
                            "again: each must equal its record, or nothing is recorded"))]),
    ("record-experiment", "records one serene-experiment output",
     record_experiment,
     [OUT,
      (("--figure",), dict(required=True)),
      (("--scenario",), dict(required=True)),
      (("--seed",), dict(type=int, required=True)),
      (("--commit",), dict(help="the commit the run was made at, if not HEAD")),
      (("--fresh",), dict(action="store_true",
                          help="drop the scenario's earlier records (the first seed of a "
                          "sweep)"))]),
    ("record-validation", "records a scripts/sim_validation.sh output of one size (OUT/nN)",
     record_validation,
     [OUT,
      (("--scenario",), dict(required=True, help="n4 or n8")),
      (("--commit",), dict(help="the commit the runs were made at, if not HEAD"))]),
    ("record-bench", "records a Google Benchmark JSON output (--benchmark_out_format=json) in "
     "docs/data/micro.jsonl",
     record_bench,
     [OUT,
      (("--binary",), dict(help="the benchmark binary's name (default: from the output)"))]),
    ("record-scale", "records a scripts/scale_sweep.sh output (OUT.jsonl) in "
     "docs/data/scale.jsonl",
     record_scale,
     [OUT]),
    ("plot-scale", "draws a scripts/scale_sweep.sh output (OUT.jsonl), recorded or not, as a "
     "PNG",
     plot_scale_sweep,
     [OUT,
      (("--png",), dict(required=True))]),
    ("record-faults", "records a fault matrix run's rows (SERENE_FAULT_MATRIX_REPORT=FILE) in "
     "docs/data/faults.jsonl",
     record_faults,
     [OUT]),
    ("record-p4", "records one check of the P4 program in BMv2 from its output (reproduce.sh "
     "--only p4)",
     record_p4,
     [OUT,
      (("--check",), dict(required=True, choices=P4_CHECKS)),
      (("--started",), dict(type=float, help="when the check started (seconds since the "
                            "epoch): records its duration"))]),
    ("record-time", "records how long one part of scripts/reproduce.sh took (reproduce.sh "
     "calls it)",
     record_time,
     [(("--part",), dict(required=True, help="FIGURE:SCENARIO or FIGURE, as reproduce.sh "
                         "--parts lists")),
      (("--started",), dict(type=float, required=True,
                            help="when the part started (seconds since the epoch)")),
      (("--quick",), dict(action="store_true", help="a part of a --quick run"))]),
    ("record-comm", "records a scripts/comm_sweep.sh output (OUT.jsonl)",
     record_comm,
     [OUT]),
    ("record-pytorch", "records a scripts/pytorch_bench.py output (OUT/runs.jsonl) in "
     "docs/data/pytorch.jsonl",
     record_pytorch,
     [OUT]),
    ("record-python-vs-cpp", "records one seed of scripts/python_vs_cpp.sh --out OUT in "
     "docs/data/python-vs-cpp.jsonl",
     record_python_vs_cpp,
     [OUT,
      (("--seed",), dict(type=int, required=True)),
      (("--fresh",), dict(action="store_true",
                          help="drop the earlier seeds' records (the first seed of a sweep)"))]),
    ("record-soak", "records a scripts/soak.sh run (OUT/summary.json) in docs/data/soak.jsonl",
     record_soak,
     [OUT,
      (("--seconds",), dict(type=int, required=True, help="the run's --seconds"))]),
    ("record-fuzz", "records scripts/fuzz.sh --summary FILE in docs/data/fuzz.jsonl",
     record_fuzz,
     [OUT]),
    ("record-sanitizers", "records scripts/sanitizers.sh's summary "
     "(SERENE_SANITIZERS_SUMMARY=FILE) in docs/data/sanitizers.jsonl",
     record_sanitizers,
     [OUT]),
    ("tables", "rewrites every generated table in docs/",
     tables,
     [(("--check",), dict(action="store_true",
                          help="change nothing; fail if a table differs from its records"))]),
    ("plots", "redraws the plots made from docs/data",
     plots,
     []),
]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    for name, what, func, arguments in COMMANDS:
        s = sub.add_parser(name, help=what)
        for flags, kwargs in arguments:
            s.add_argument(*flags, **kwargs)
        s.set_defaults(func=func)
    args = p.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
