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


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("record-sim", help="records a serene-sim --seeds output (or several: "
                       "the parts of one sweep)")
    s.add_argument("out", nargs="+")
    s.add_argument("--commit", help="the commit the sweep ran at, if not HEAD (a sweep recorded "
                   "after later commits that do not change what it measures)")
    s.add_argument("--figure", required=True)
    s.add_argument("--scenario", required=True)
    s.add_argument("--label", action="append",
                   help="record only the runs with this label (repeat for more; labels may "
                   "hold commas, as QUORUM(3,inf) does)")
    s.add_argument("--merge", action="store_true",
                   help="keep the scenario's other records; replace only the same seed and label")
    s.set_defaults(func=record_sim)
    s = sub.add_parser("record-experiment", help="records one serene-experiment output")
    s.add_argument("out")
    s.add_argument("--figure", required=True)
    s.add_argument("--scenario", required=True)
    s.add_argument("--seed", type=int, required=True)
    s.add_argument("--commit", help="the commit the run was made at, if not HEAD")
    s.add_argument("--fresh", action="store_true",
                   help="drop the scenario's earlier records (the first seed of a sweep)")
    s.set_defaults(func=record_experiment)
    s = sub.add_parser("record-validation",
                       help="records a scripts/sim_validation.sh output of one size (OUT/nN)")
    s.add_argument("out")
    s.add_argument("--scenario", required=True, help="n4 or n8")
    s.add_argument("--commit", help="the commit the runs were made at, if not HEAD")
    s.set_defaults(func=record_validation)
    s = sub.add_parser("record-bench", help="records a Google Benchmark JSON output "
                       "(--benchmark_out_format=json) in docs/data/micro.jsonl")
    s.add_argument("out")
    s.add_argument("--binary", help="the benchmark binary's name (default: from the output)")
    s.set_defaults(func=record_bench)
    s = sub.add_parser("record-scale", help="records a scripts/scale_sweep.sh output "
                       "(OUT.jsonl) in docs/data/scale.jsonl")
    s.add_argument("out")
    s.set_defaults(func=record_scale)
    s = sub.add_parser("plot-scale", help="draws a scripts/scale_sweep.sh output (OUT.jsonl), "
                       "recorded or not, as a PNG")
    s.add_argument("out")
    s.add_argument("--png", required=True)
    s.set_defaults(func=plot_scale_sweep)
    s = sub.add_parser("record-faults", help="records a fault matrix run's rows "
                       "(SERENE_FAULT_MATRIX_REPORT=FILE) in docs/data/faults.jsonl")
    s.add_argument("out")
    s.set_defaults(func=record_faults)
    s = sub.add_parser("record-p4", help="records one check of the P4 program in BMv2 from "
                       "its output (reproduce.sh --only p4)")
    s.add_argument("out")
    s.add_argument("--check", required=True, choices=P4_CHECKS)
    s.add_argument("--started", type=float,
                   help="when the check started (seconds since the epoch): records its duration")
    s.set_defaults(func=record_p4)
    s = sub.add_parser("record-time", help="records how long one part of scripts/reproduce.sh "
                       "took (reproduce.sh calls it)")
    s.add_argument("--part", required=True, help="FIGURE:SCENARIO or FIGURE, as reproduce.sh "
                   "--parts lists")
    s.add_argument("--started", type=float, required=True,
                   help="when the part started (seconds since the epoch)")
    s.add_argument("--quick", action="store_true", help="a part of a --quick run")
    s.set_defaults(func=record_time)
    s = sub.add_parser("record-comm", help="records a scripts/comm_sweep.sh output (OUT.jsonl)")
    s.add_argument("out")
    s.set_defaults(func=record_comm)
    s = sub.add_parser("record-pytorch", help="records a scripts/pytorch_bench.py output "
                       "(OUT/runs.jsonl) in docs/data/pytorch.jsonl")
    s.add_argument("out")
    s.set_defaults(func=record_pytorch)
    s = sub.add_parser("record-python-vs-cpp", help="records one seed of "
                       "scripts/python_vs_cpp.sh --out OUT in docs/data/python-vs-cpp.jsonl")
    s.add_argument("out")
    s.add_argument("--seed", type=int, required=True)
    s.add_argument("--fresh", action="store_true",
                   help="drop the earlier seeds' records (the first seed of a sweep)")
    s.set_defaults(func=record_python_vs_cpp)
    s = sub.add_parser("record-soak", help="records a scripts/soak.sh run (OUT/summary.json) "
                       "in docs/data/soak.jsonl")
    s.add_argument("out")
    s.add_argument("--seconds", type=int, required=True, help="the run's --seconds")
    s.set_defaults(func=record_soak)
    s = sub.add_parser("record-fuzz", help="records scripts/fuzz.sh --summary FILE in "
                       "docs/data/fuzz.jsonl")
    s.add_argument("out")
    s.set_defaults(func=record_fuzz)
    s = sub.add_parser("record-sanitizers", help="records scripts/sanitizers.sh's summary "
                       "(SERENE_SANITIZERS_SUMMARY=FILE) in docs/data/sanitizers.jsonl")
    s.add_argument("out")
    s.set_defaults(func=record_sanitizers)
    s = sub.add_parser("tables", help="rewrites every generated table in docs/")
    s.add_argument("--check", action="store_true",
                   help="change nothing; fail if a table differs from its records")
    s.set_defaults(func=tables)
    s = sub.add_parser("plots", help="redraws the plots made from docs/data")
    s.set_defaults(func=plots)
    args = p.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
