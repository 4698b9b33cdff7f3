"""Serene SYNC against Gloo on the demo's job and the training curves
(demo-real, scenario "gloo")."""

from .common import fmt_range, machines_line, no_records, read_records


def demo_real(scenario):
    return [r for r in read_records("demo-real") if r.get("scenario") == scenario]


def table_baselines():
    """Serene SYNC against Gloo's two allreduce algorithms on the demo's job
    (demo-real, scenario "gloo"): per run, its time split into compute and
    communication (and the barrier's part of it: under Gloo the whole
    allreduce), and Serene SYNC's JCT over each Gloo run's, seed by seed."""
    records = demo_real("gloo")
    if not records:
        return no_records("demo-real", "scripts/reproduce.sh --only demo-real:gloo", "gloo")
    seeds = sorted({r["seed"] for r in records})
    runs = {(r["seed"], r["label"]): r for r in records}
    labels = list(dict.fromkeys(r["label"] for r in records))
    ms = lambda x: f"{1e3 * x:.2f}"
    lines = [f"{len(seeds)} seeds ({', '.join(map(str, seeds))}); median (min–max) over seeds.",
             "", "| run | JCT (s) | compute per iteration (ms) | communication per iteration "
             "(ms) | communication share of a step (%) | of it, waiting at the barrier (%) | "
             "iterations | final accuracy |",
             "|---|---|---|---|---|---|---|---|"]
    for label in labels:
        rs = [runs[(s, label)] for s in seeds if (s, label) in runs]
        col = lambda key: [r.get(key) for r in rs]
        barrier = [100 * r["barrier_wait_total_s"] / r["wait_total_s"] for r in rs
                   if r.get("wait_total_s") and r.get("barrier_wait_total_s") is not None]
        lines.append(
            f"| {'Serene ' if label == 'SYNC' else ''}{label} | "
            f"{fmt_range(col('jct_s'), lambda x: f'{x:.2f}')} | "
            f"{fmt_range(col('compute_per_iteration_s'), ms)} | "
            f"{fmt_range(col('comm_per_iteration_s'), ms)} | "
            f"{fmt_range(col('comm_share_pct'), lambda x: f'{x:.1f}')} | "
            f"{fmt_range(barrier, lambda x: f'{x:.0f}')} | "
            f"{fmt_range(col('iterations'), lambda x: f'{x:.0f}')} | "
            f"{fmt_range(col('final_accuracy'), lambda x: f'{x:.4f}')} |")
    lines.append("")
    for label in labels:
        if label == "SYNC":
            continue
        ratios = [runs[(s, "SYNC")]["jct_s"] / runs[(s, label)]["jct_s"] for s in seeds
                  if (s, "SYNC") in runs and (s, label) in runs]
        if ratios:
            lines.append(f"Serene SYNC's JCT over {label}'s, seed by seed: "
                         f"**{fmt_range(ratios, lambda x: f'{x:.2f}')}**.")
    return lines + ["", machines_line(records)]


def table_training_curve():
    """Rank 0's test accuracy every 100 steps of the demo's job under Serene
    SYNC and Gloo (demo-real, scenario "gloo"): median (min–max) over seeds,
    up to the step every run reached."""
    records = demo_real("gloo")
    curves = [r for r in records if r.get("accuracy_curve")]
    if not curves:
        return no_records("demo-real", "scripts/reproduce.sh --only demo-real:gloo", "gloo")
    labels = list(dict.fromkeys(r["label"] for r in curves))
    last = min(r["accuracy_curve"][-1][0] for r in curves)
    at = {}
    for r in curves:
        for step, acc in r["accuracy_curve"]:
            at.setdefault((r["label"], step), []).append(acc)
    steps = sorted({s for (_, s) in at if s % 100 == 0 and s <= last})
    f4 = lambda x: f"{x:.4f}"
    lines = [f"{len({r['seed'] for r in curves})} seeds; median (min–max) over seeds.", "",
             "| step | " + " | ".join(("Serene " if x == "SYNC" else "") + x for x in labels) +
             " |", "|---|" + "---|" * len(labels)]
    for step in steps:
        lines.append(f"| {step} | " + " | ".join(fmt_range(at.get((x, step), []), f4)
                                                 for x in labels) + " |")
    f0 = lambda v: f"{v:.0f}"
    ends = [f"{('Serene ' if x == 'SYNC' else '') + x}: "
            f"{fmt_range([r['iterations'] for r in curves if r['label'] == x], f0)}"
            for x in labels]
    # The runs of one seed against each other, at every step both evaluated.
    by_seed = {}
    for r in curves:
        by_seed.setdefault(r["seed"], []).append(dict(map(tuple, r["accuracy_curve"])))
    gap = max((abs(a[k] - b[k]) for cs in by_seed.values() for a in cs for b in cs
               for k in a if k in b), default=0.0)
    lines += ["", "Iterations to the target (0.84): " + "; ".join(ends) + ". Largest "
              f"difference between two runs of one seed at one evaluation: {gap:.4f}."]
    return lines + ["", machines_line(records)]
