"""Fuzzing (fuzz): record-fuzz and its table."""

from .common import machines_line, no_records, read_records, record_summary_lines


def record_fuzz(args):
    """scripts/fuzz.sh --summary FILE: a target's run replaces its earlier
    one of the same length."""
    record_summary_lines(args.out, "fuzz", lambda run: f"{run['target']}-{run['seconds']}s",
                         "scripts/fuzz.sh --summary FILE")


def table_fuzz():
    records = read_records("fuzz")
    if not records:
        return no_records("fuzz", "scripts/reproduce.sh --only fuzz")
    lines = ["| target | time | executions | exec/s | coverage (edges / features) | corpus | "
             "findings |", "|---|---:|---:|---:|---|---|---|"]
    count = lambda n: f"{n / 1e6:.2f} M" if n >= 1e6 else f"{n / 1e3:.1f} k"
    for r in sorted(records, key=lambda r: (r["seconds"], r["target"])):
        lines.append(
            f"| {r['target']} | {r['seconds']} s | {count(r['executions'])} | "
            f"{r['executions'] / r['seconds']:,.0f} | {r['edges']} / {r['features']} | "
            f"{r['corpus_files']} inputs, {r['corpus_bytes'] / 1024:.1f} KiB | "
            f"{'**yes**' if r['findings'] else 'none'} |")
    return lines + ["", machines_line(records)]
