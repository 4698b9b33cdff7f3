"""The soak (soak): record-soak and its table."""
import json
import os

from .common import fail, machine, machines_line, no_records, read_records, replace_records


def record_soak(args):
    """Records a scripts/soak.sh run (OUT/summary.json) in docs/data/soak.jsonl;
    a run replaces the earlier one of the same length."""
    if not os.path.exists(args.out):
        fail(f"no {args.out} (scripts/soak.sh --out DIR writes DIR/summary.json)")
    with open(args.out) as f:
        summary = json.load(f)
    scenario = f"{args.seconds}s"
    replace_records("soak", scenario, [dict(machine(), figure="soak", scenario=scenario,
                                            **summary)])


def table_soak():
    records = read_records("soak")
    if not records:
        return no_records("soak", "scripts/reproduce.sh --only soak")
    lines = ["| run | rounds | serene-bench runs OK | clocks | INC rows applied (exactly once) | "
             "duplicate INC rows ignored | client retransmissions / NACKs | datagrams through "
             "the injectors (rx / tx) | RSS of the switch after the first round | violations |",
             "|---|---:|---:|---:|---:|---:|---|---|---|---:|"]
    k = lambda n: f"{n / 1e3:,.0f} k" if n < 1e6 else f"{n / 1e6:.1f} M"
    for r in sorted(records, key=lambda r: r["seconds"]):
        fx = r.get("exit_faults") or {}
        both = lambda key: " / ".join(k(fx[d].get(key, 0)) for d in ("rx", "tx") if d in fx)
        balanced = all(v.get("offered", 0) + v.get("duplicated", 0) ==
                       v.get("delivered", 0) + v.get("dropped", 0) for v in fx.values())
        lines.append(
            f"| `scripts/soak.sh --seconds {r['scenario'][:-1]}`, {r['jobs']} jobs × "
            f"{r['workers']} ranks, {r['elements']:,} values, `{r['fault']}` | {r['rounds']} | "
            f"{r['runs_ok']}/{r['runs']} | {r['clocks_total']:,} | {r['inc_rows_applied']:,} | "
            f"{r['duplicates_ignored']:,} | {r['retransmissions']:,} / {r['nacks']:,} | "
            f"{both('offered')} offered; {both('dropped')} dropped, {both('duplicated')} "
            f"duplicated, {both('reordered')} reordered, {both('delayed')} delayed; "
            f"offered + duplicated = delivered + dropped: {'yes' if balanced else '**no**'} | "
            f"{r['rss_first_kib'] / 1024:.1f} MiB, last {r['rss_last_kib'] / 1024:.1f}, max "
            f"{r['rss_max_kib'] / 1024:.1f} MiB (slope {r['rss_slope_kib_per_min']:.0f} KiB/min)"
            f" | {r['violations']} |")
    return lines + ["", machines_line(records)]
