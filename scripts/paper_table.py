#!/usr/bin/python3
"""The paper's numbers beside serene-sim's (docs/results.md).

Reads the summary.json of `serene-sim -c experiments/paper.toml` runs (one per
rank count) and prints a Markdown table: per run, JCT and waiting as % of
SYNC (mean ± sd over seeds), the paper's value where it reports one, the
barrier wait (time the switch held ranks for others, transfers excluded) as %
of SYNC's, iterations of rank 0 and final accuracy. Summaries written before
the barrier wait was measured show "-" there.

    /usr/bin/python3 scripts/paper_table.py N=4:results/paper-n4/summary.json \
        N=8:results/paper-n8/summary.json
"""
import json
import sys

# The reference paper, 4 workers (JCT and cumulative waiting as % of SYNC).
PAPER_JCT = {"SSP(2)": 64.9, "SSP(10)": 60.3, "SSP(16)": 60.1, "SSP(32)": 58.7,
             "SSP(48)": 58.4, "ASYNC": 55.5}
PAPER_WAIT = {"SSP(10)": 51.7, "ASYNC": 47.9}
PAPER_N8_JCT = {"SSP(10)": 54.0}  # "W=10 saved 46 %" with 8 workers


def spread(s, digits=1):
    if not s:
        return "-"
    if s["n"] == 1:
        return f"{s['mean']:.{digits}f}"
    return f"{s['mean']:.{digits}f} ± {s['sd']:.{digits}f}"


def main(args):
    if not args or any(":" not in a for a in args):
        sys.stderr.write(__doc__)
        return 2
    for arg in args:
        label, path = arg.split(":", 1)
        try:
            runs = json.load(open(path))["runs"]
        except (OSError, ValueError, KeyError) as e:
            sys.stderr.write(f"paper_table.py: {path}: {e}\n")
            return 1
        paper_jct = PAPER_N8_JCT if label.strip() == "N=8" else PAPER_JCT
        paper_wait = PAPER_WAIT if label.strip() == "N=4" else {}
        seeds = max(r["seeds"] for r in runs)
        print(f"**{label}** ({seeds} seed{'s' if seeds > 1 else ''})\n")
        print("| run | JCT % of SYNC | paper | waiting % of SYNC | paper | barrier wait % of SYNC "
              "| no-wait JCT % of SYNC's JCT | iterations | final accuracy | reached target |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for r in runs:
            name = r["label"]
            print(f"| {name} | {spread(r['jct_pct_of_baseline'])} | {paper_jct.get(name, '')} "
                  f"| {spread(r['wait_pct_of_baseline'])} | {paper_wait.get(name, '')} "
                  f"| {spread(r.get('barrier_wait_pct_of_baseline'))} "
                  f"| {spread(r['no_wait_jct_pct_of_baseline'])} "
                  f"| {spread(r['iterations_rank0'], 0)} | {spread(r['final_accuracy'], 4)} "
                  f"| {r['reached_target']}/{r['seeds'] - r['failed']} |")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
