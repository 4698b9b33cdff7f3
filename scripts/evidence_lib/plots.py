"""The plots made from the records (gnuplot), in docs/img/."""
import os
import re
import statistics
import subprocess
import tempfile

from .comm import COMM_TARGET_WORKERS
from .common import DOCS, ROOT, by_scenario, group_by, read_records
from .policies import pct_of_sync_by_label
from .python_api import pytorch_by_config
from .scale import read_scale_sweep


def plots(args):
    """JCT as % of SYNC per scenario and run, median with min–max bars (the
    policies-sim and paper-scale figures, and the two demos with real
    processes); the comm figure's time per iteration against model size;
    the adaptive policy's window over time; the scale sweep; the PyTorch
    paths' step and communication times."""
    plot_comm()
    plot_windows()
    plot_scale()
    plot_pct_of_sync("policies-sim", "policies-sim.png")
    plot_pct_of_sync("paper-scale", "paper-scale.png")
    plot_pct_of_sync("demo-real", "demo-real.png", scenarios=("demo", "slowdown-floor"))
    plot_pytorch()


def plot_pct_of_sync(figure, image, scenarios=None):
    by = by_scenario(r for r in read_records(figure)
                     if scenarios is None or r.get("scenario") in scenarios)
    if not by:
        return
    with tempfile.TemporaryDirectory() as tmp:
        dat = os.path.join(tmp, "p.dat")
        rows = []
        for scenario in sorted(by):
            for label, pct in pct_of_sync_by_label(by[scenario]).items():
                if pct:
                    rows.append((f"{scenario}:{label}", statistics.median(pct), min(pct),
                                 max(pct)))
        with open(dat, "w") as f:
            for i, (name, med, lo, hi) in enumerate(rows):
                f.write(f'{i} "{name}" {med} {lo} {hi}\n')
        out = os.path.join(DOCS, "img", image)
        script = f"""set terminal pngcairo size {max(700, 26 * len(rows) + 200)},560 font ",9"
set output "{out}"
set style fill solid 0.6
set rmargin 8
set boxwidth 0.7
set ylabel "JCT, % of SYNC (median, min-max over seeds)"
set xtics rotate by -60 nomirror
set yrange [0:*]
set grid ytics
unset key
plot "{dat}" using 1:3:xtic(2) with boxes, "" using 1:3:4:5 with yerrorbars lc rgb "black" pt 0
"""
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
        print(f"evidence: {os.path.relpath(out, ROOT)}")


def plot_comm():
    """Per-iteration time against model size at N = 4 (medians over runs):
    Serene at both row widths, Gloo's best and default allreduce."""
    records = [r for r in read_records("comm") if r["workers"] == COMM_TARGET_WORKERS]
    if not records:
        return
    series = group_by(records, lambda r: (r["row"], r["elements"]))
    rows = sorted({row for row, _ in series})
    with tempfile.TemporaryDirectory() as tmp:
        plots_ = []
        for row in rows:
            dat = os.path.join(tmp, f"row{row}.dat")
            with open(dat, "w") as f:
                for (rw, e), rs in sorted(series.items()):
                    if rw != row:
                        continue
                    med = lambda key: statistics.median(r[key] for r in rs if r.get(key))
                    f.write(f"{e} {med('serene_ms')} {med('gloo_best_ms')} "
                            f"{med('gloo_default_ms')}\n")
            plots_.append(f'"{dat}" using 1:2 with linespoints lw 2 title "Serene, rows of {row}"')
        # Gloo does not depend on Serene's row: its series from the widest rows' runs.
        gdat = os.path.join(tmp, f"row{rows[-1]}.dat")
        plots_ += [f'"{gdat}" using 1:3 with linespoints lw 2 title "Gloo, best algorithm"',
                   f'"{gdat}" using 1:4 with linespoints lw 2 title "Gloo, default (PyTorch\'s)"']
        out = os.path.join(DOCS, "img", "comm_vs_gloo.png")
        script = f"""set terminal pngcairo size 900,560 noenhanced
set output "{out}"
set title "Per-iteration time vs model size, {COMM_TARGET_WORKERS} workers (median over runs)"
set logscale xy
set xlabel "model size (int32 elements)"
set ylabel "ms per iteration (exchange / allreduce)"
set key top left
set grid
plot {", ".join(plots_)}
"""
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
        print(f"evidence: {os.path.relpath(out, ROOT)}")


def plot_scale(records=None, out=None):
    """Clocks per second and the switch's CPU per rank-clock against ranks
    (medians over the runs of each point): docs/img/scale.png from the
    committed records, or `out` from a sweep's own `records`."""
    if records is None:
        records = read_records("scale")
    if not records:
        return
    by = group_by(records, "ranks")
    with tempfile.TemporaryDirectory() as tmp:
        dat = os.path.join(tmp, "scale.dat")
        with open(dat, "w") as f:
            for n, rs in sorted(by.items()):
                f.write(f"{n} {statistics.median(r['clocks_per_s'] for r in rs)} "
                        f"{statistics.median(r['switch_cpu_us_per_rank_clock'] for r in rs)}\n")
        out = out or os.path.join(DOCS, "img", "scale.png")
        cores = records[0].get("cores", os.cpu_count())
        script = f"""set terminal pngcairo size 900,520 noenhanced
set output "{out}"
set title "One switch, N worker processes on {cores} cores (SYNC, median over runs)"
set logscale x 2
set xlabel "ranks"
set ylabel "clocks per second"
set y2label "switch CPU per clock of one rank (us)"
set ytics nomirror
set y2tics
set key top right
set grid
plot "{dat}" using 1:2 with linespoints lw 2 title "clocks/s (all ranks share the cores)", \\
     "{dat}" using 1:3 axes x1y2 with linespoints lw 2 title "switch CPU us per rank-clock"
"""
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
        print(f"evidence: {os.path.relpath(out, ROOT)}")


def plot_scale_sweep(args):
    plot_scale(read_scale_sweep(args.out), args.png)


def window_value(rule):
    """The window a rule text stands for, for plotting: sync 0, ssp:W W,
    a quorum (the slower ranks left out) QUORUM_Y, async (and anything
    unbounded) ASYNC_Y."""
    if rule == "sync":
        return 0
    if rule.startswith("quorum:"):
        return QUORUM_Y
    m = re.fullmatch(r"ssp:(\d+)", rule)
    return int(m.group(1)) if m else ASYNC_Y


QUORUM_Y = 96
ASYNC_Y = 128


def plot_windows():
    """The adaptive policy's window over each scenario's run (seed 1)."""
    by = by_scenario(read_records("policies-sim"))
    series = []
    for scenario in sorted(by):
        runs = [r for r in by[scenario] if r["label"] == "ADAPTIVE" and r["seed"] == 1]
        if not runs or "policy_change_s" not in runs[0] or not runs[0]["jct_s"]:
            continue
        r = runs[0]
        points = list(zip(r["policy_change_s"], (window_value(x) for x in r["policy_changes"])))
        if not points or points[0][0] > 0:  # the job's rule (sync) until the first change
            points.insert(0, (0.0, 0))
        points.append((r["jct_s"], points[-1][1] if points else 0))
        series.append((scenario, [(t / r["jct_s"], w) for t, w in points]))
    if not series:
        return
    with tempfile.TemporaryDirectory() as tmp:
        plots = []
        for i, (name, pts) in enumerate(series):
            dat = os.path.join(tmp, f"{i}.dat")
            with open(dat, "w") as f:
                for t, w in pts:
                    f.write(f"{t} {w}\n")
            plots.append(f'"{dat}" using 1:2 with steps lw 2 title "{name}"')
        out = os.path.join(DOCS, "img", "adaptive-window.png")
        script = f"""set terminal pngcairo size 900,420 font ",10"
set output "{out}"
set xlabel "time, fraction of the run's JCT (seed 1)"
set ylabel "window W (quorum: slower ranks left out)"
set yrange [-4:{ASYNC_Y + 8}]
set ytics ("sync" 0, "16" 16, "32" 32, "64" 64, "quorum" {QUORUM_Y}, "async" {ASYNC_Y})
set xrange [0:1]
set grid ytics
set key outside right
plot {", ".join(plots)}
"""
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
        print(f"evidence: {os.path.relpath(out, ROOT)}")


def plot_pytorch():
    """Step and communication time per configuration (median, min–max)."""
    records = [r for r in read_records("pytorch") if r.get("scenario") == "n4"]
    if not records:
        return
    with tempfile.TemporaryDirectory() as tmp:
        dat = os.path.join(tmp, "p.dat")
        with open(dat, "w") as f:
            for config, rs in pytorch_by_config(records).items():
                cells = []
                for key in ("median_step_s", "median_comm_step_s"):
                    xs = [1e3 * r[key] for r in rs if r.get(key) is not None] or [0.0]
                    cells += [statistics.median(xs), min(xs), max(xs)]
                f.write(f"{config} " + " ".join(f"{x:.3f}" for x in cells) + "\n")
        out = os.path.join(DOCS, "img", "pytorch-n4.png")
        script = f"""set terminal pngcairo size 900,450 font ",10"
set output "{out}"
set title "PyTorch on Serene vs gloo, {records[0]['world_size']} ranks: median per step (min-max)"
set ylabel "ms"
set style data histogram
set style histogram errorbars gap 2 lw 1
set style fill solid 0.6 border -1
set key top left
set xtics rotate by -20
set yrange [0:*]
plot "{dat}" using 2:3:4:xtic(1) title "step time", "" using 5:6:7 title "communication time"
"""
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
        print(f"evidence: {os.path.relpath(out, ROOT)}")
