#!/usr/bin/python3
"""Paired comparison of two runs of a multi-seed serene-sim output.

The runs of one seed share the model, the data order and the straggler draws,
so a difference between two runs is best judged seed by seed. For runs A and
B of `serene-sim --seeds ...` (its --out directory, one seed-N/ per seed),
prints per seed and as mean ± sd with a 95 % confidence interval (Student's t):

  - JCT of B as % of A's;
  - the same split in two: the time B took to reach the step A stopped at (the
    cost per iteration, e.g. a policy's first clocks under SYNC), and the
    iterations B needed to the target minus A's (where the two update streams
    cross the target accuracy);
  - accuracy of B minus A's at equal steps, averaged over every evaluation
    both made, and over the last 40 % of them (near the target): does B's
    model learn slower per iteration?

    /usr/bin/python3 scripts/paired_diff.py results/adaptive-n8 ASYNC ADAPTIVE
"""
import csv
import glob
import math
import os
import re
import statistics
import sys

# Two-sided 95 % quantiles of Student's t, by degrees of freedom.
T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31,
       9: 2.26, 10: 2.23, 11: 2.20, 12: 2.18, 13: 2.16, 14: 2.14, 15: 2.13,
       16: 2.12, 17: 2.11, 18: 2.10, 19: 2.09, 20: 2.09, 25: 2.06, 30: 2.04}


def t95(df):
    for d in sorted(T95, reverse=True):
        if df >= d:
            return T95[df] if df in T95 else T95[d]
    raise ValueError("need at least two seeds")


def slug(label):
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")


def curve(seed_dir, index, label):
    """rank 0's evaluations of the run: [(time_s, accuracy, step)]."""
    path = os.path.join(seed_dir, "plot", f"{index}-{slug(label)}.dat")
    if not os.path.exists(path):
        # Older outputs name the file after the policy; take the index alone.
        found = glob.glob(os.path.join(seed_dir, "plot", f"{index}-*.dat"))
        if len(found) != 1:
            sys.exit(f"paired_diff: no curve for run {index} ({label}) in {seed_dir}/plot")
        path = found[0]
    points = []
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            t, acc, step = line.split()
            points.append((float(t), float(acc), int(step)))
    return points


def seed_rows(out_dir, a, b):
    rows = []
    for seed_dir in sorted(glob.glob(os.path.join(out_dir, "seed-*")),
                           key=lambda d: int(d.rsplit("-", 1)[1])):
        with open(os.path.join(seed_dir, "results.csv")) as f:
            runs = list(csv.DictReader(f))
        labels = [r["label"] for r in runs]
        for want in (a, b):
            if want not in labels:
                sys.exit(f"paired_diff: {seed_dir} has no run '{want}' (runs: {', '.join(labels)})")
        ra, rb = runs[labels.index(a)], runs[labels.index(b)]
        if ra["stop_reason"] != "target_reached" or rb["stop_reason"] != "target_reached":
            print(f"{os.path.basename(seed_dir)}: skipped (a run did not reach the target)")
            continue
        ca = curve(seed_dir, labels.index(a) + 1, a)
        cb = curve(seed_dir, labels.index(b) + 1, b)
        a_steps = {step: (t, acc) for t, acc, step in ca}
        # (step, B's accuracy, A's accuracy) at every step both evaluated.
        common = [(step, acc, a_steps[step][1]) for _, acc, step in cb
                  if step in a_steps and step > 0]
        end = min(ca[-1][2], cb[-1][2])
        late = [c for c in common if c[0] >= 0.6 * end]
        b_at_end = next(t for t, _, step in cb if step == end)
        a_at_end = a_steps[end][0]
        jct_a, jct_b = float(ra["job_completion_s"]), float(rb["job_completion_s"])
        rows.append({
            "seed": os.path.basename(seed_dir),
            "jct_pct": 100.0 * jct_b / jct_a,
            # Rank 0's time to the last step both evaluated, B over A.
            "time_pct": 100.0 * b_at_end / a_at_end,
            "iter_diff": int(rb["iterations_rank0"]) - int(ra["iterations_rank0"]),
            "acc_diff_pt": 100.0 * statistics.fmean(x - y for _, x, y in common),
            "late_acc_diff_pt": 100.0 * statistics.fmean(x - y for _, x, y in late),
        })
    return rows


def summary(values):
    values = [v for v in values if not math.isnan(v)]
    if len(values) < 2:
        return "-"
    m, sd = statistics.fmean(values), statistics.stdev(values)
    half = t95(len(values) - 1) * sd / math.sqrt(len(values))
    return f"{m:+.2f} ± {sd:.2f} (95 % CI {m - half:+.2f} … {m + half:+.2f}, n = {len(values)})"


def main():
    if len(sys.argv) != 4 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) == 2 else 2)
    out_dir, a, b = sys.argv[1:]
    rows = seed_rows(out_dir, a, b)
    if not rows:
        sys.exit(f"paired_diff: no seed-*/results.csv with both runs under {out_dir}")
    print(f"| seed | JCT of {b}, % of {a} | time to the last step both reached, % | "
          f"iterations to target, {b} − {a} | accuracy at equal steps, {b} − {a} (pt) | "
          f"the same, last 40 % of the steps (pt) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['seed']} | {r['jct_pct']:.1f} | {r['time_pct']:.1f} | {r['iter_diff']:+d} | "
              f"{r['acc_diff_pt']:+.3f} | {r['late_acc_diff_pt']:+.3f} |")
    print()
    print(f"JCT, % of {a} − 100:          " + summary([r["jct_pct"] - 100 for r in rows]))
    print(f"time per step, % − 100:        " + summary([r["time_pct"] - 100 for r in rows]))
    print(f"iterations to target, {b} − {a}: " + summary([r["iter_diff"] for r in rows]))
    print(f"accuracy at equal steps (pt):  " + summary([r["acc_diff_pt"] for r in rows]))
    print(f"  the last 40 % of the steps:  " + summary([r["late_acc_diff_pt"] for r in rows]))


if __name__ == "__main__":
    main()
