"""The scale sweep (scale): scripts/scale_sweep.sh's runs, record-scale and
its table."""
import json

from .common import (fail, fmt_range, group_by, machine, machines_line, no_records, read_records,
                     replace_records)


def read_scale_sweep(path):
    """The runs of a scripts/scale_sweep.sh output (OUT.jsonl), with the keys
    a scale record keeps; fails on a file that is not one, or is empty."""
    try:
        with open(path) as f:
            rows = [{k: r[k] for k in SCALE_KEYS}
                    for r in (json.loads(line) for line in f if line.strip())]
    except (OSError, ValueError, KeyError) as e:
        fail(f"{path}: not a scripts/scale_sweep.sh OUT.jsonl ({e})")
    if not rows:
        fail(f"{path}: no records")
    return rows


def record_scale(args):
    """Records a scripts/scale_sweep.sh output (OUT.jsonl, one line per run
    of each point): the sweep replaces every earlier scale record."""
    m = machine()
    records = [dict(m, figure="scale", scenario="scale", source="scripts/scale_sweep.sh", **r)
               for r in read_scale_sweep(args.out)]
    replace_records("scale", "scale", records)


SCALE_KEYS = ["ranks", "run", "clocks", "elements", "clocks_per_s", "switch_cpu_ms_per_clock",
              "switch_cpu_us_per_rank_clock", "read_retransmits", "clock_retransmits", "wall_s"]


def table_scale():
    records = read_records("scale")
    if not records:
        return no_records("scale", "scripts/reproduce.sh --only scale")
    by = group_by(records, "ranks")
    runs = sorted({len(v) for v in by.values()})
    lines = [f"Median (min–max) over {'/'.join(map(str, runs))} runs of each point; re-sends "
             "summed over the runs.", "",
             "| ranks | clocks per run | clocks/s | switch CPU per clock of all ranks (ms) | "
             "per clock of one rank (µs) | READs re-sent | CLOCKs re-sent |",
             "|---|---|---|---|---|---|---|"]
    for n, rs in sorted(by.items()):
        lines.append(
            f"| {n} | {'/'.join(str(c) for c in sorted({r['clocks'] for r in rs}))} | "
            f"{fmt_range([r['clocks_per_s'] for r in rs], lambda x: f'{x:.1f}')} | "
            f"{fmt_range([r['switch_cpu_ms_per_clock'] for r in rs], lambda x: f'{x:.3f}')} | "
            f"{fmt_range([r['switch_cpu_us_per_rank_clock'] for r in rs], lambda x: f'{x:.1f}')} | "
            f"{sum(r['read_retransmits'] for r in rs)} | {sum(r['clock_retransmits'] for r in rs)} |")
    return lines + ["", machines_line(records)]
