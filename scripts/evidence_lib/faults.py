"""The fault matrix (faults): record-faults and its two tables."""

from .common import (fail, group_by, machine, machines_line, no_records, read_records,
                     replace_records)


# The fault matrix (tests/faults/fault_matrix_test.cc): one Markdown row per
# case in the file SERENE_FAULT_MATRIX_REPORT names; one record per case.
FAULT_COLUMNS = ["policy", "fault", "dir", "seed", "clocks", "result", "wall_s", "retransmits",
                 "nacks", "duplicate_incs", "late_incs", "rx_injector", "tx_injector"]


def injector_counts(cell):
    """'offered/dropped/duplicated/reordered/delayed' -> five ints; '-' (no
    injector in that direction) -> None."""
    if cell == "-":
        return None
    counts = [int(x) for x in cell.split("/")]
    if len(counts) != 5:
        raise ValueError(f"injector cell '{cell}' has {len(counts)} counts, not 5")
    return counts


def record_faults(args):
    """Records a fault matrix run's rows (SERENE_FAULT_MATRIX_REPORT=FILE):
    the run replaces every earlier fault-matrix record."""
    m = machine()
    records = []
    try:
        with open(args.out) as f:
            lines = f.readlines()
    except OSError as e:
        fail(f"{args.out}: {e}")
    for n, line in enumerate(lines, 1):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != len(FAULT_COLUMNS) or not cells[3].isdigit():
            continue  # a header, a separator or another line
        try:
            c = dict(zip(FAULT_COLUMNS, cells))
            r = dict(m, figure="faults", scenario="matrix", source="fault_matrix_test")
            r.update({"policy": c["policy"], "fault": c["fault"].strip("`"), "dir": c["dir"],
                      "seed": int(c["seed"]), "clocks": int(c["clocks"]),
                      "ok": c["result"] == "OK", "wall_s": float(c["wall_s"]),
                      "retransmits": int(c["retransmits"]), "nacks": int(c["nacks"]),
                      "duplicate_incs": int(c["duplicate_incs"]),
                      "late_incs": int(c["late_incs"]),
                      "rx_injector": injector_counts(c["rx_injector"]),
                      "tx_injector": injector_counts(c["tx_injector"])})
        except ValueError as e:
            fail(f"{args.out}:{n}: not a fault matrix row ({e})")
        records.append(r)
    if not records:
        fail(f"{args.out}: no fault matrix rows (run fault_matrix_test with "
             "SERENE_FAULT_MATRIX_REPORT=FILE)")
    replace_records("faults", "matrix", records)


def table_faults_summary():
    """Per policy and fault (directions and seeds summed): cases passed, wall
    time and the client's retransmissions per case (min–max), the switch's
    NACKs and ignored INCs, and what the injectors did."""
    records = read_records("faults")
    if not records:
        return no_records("faults", "scripts/reproduce.sh --only faults")
    groups = group_by(records, lambda r: (r["policy"], r["fault"]))
    lines = [f"{len(records)} cases, {sum(r['ok'] for r in records)} passed, one run of the "
             f"matrix, the cases one after another ({sum(r['wall_s'] for r in records):.0f} s of "
             "serene-bench).", "",
             "| policy | fault | dirs | seeds | clocks | cases OK | wall s (min–max) | client "
             "retransmissions per case (min–max) | NACKs | duplicate INCs ignored | late INCs "
             "ignored | datagrams offered / dropped / duplicated / reordered / delayed (all "
             "cases) |",
             "|---|---|---|---|---:|---:|---|---|---:|---:|---:|---|"]
    for (policy, fault), rs in groups.items():
        totals = [0] * 5
        for r in rs:
            for inj in (r["rx_injector"], r["tx_injector"]):
                if inj:
                    totals = [a + b for a, b in zip(totals, inj)]
        wall = [r["wall_s"] for r in rs]
        retx = [r["retransmits"] for r in rs]
        lines.append(
            f"| {policy} | `{fault}` | {', '.join(dict.fromkeys(r['dir'] for r in rs))} | "
            f"{','.join(dict.fromkeys(str(r['seed']) for r in rs))} | "
            f"{','.join(dict.fromkeys(str(r['clocks']) for r in rs))} | "
            f"{sum(r['ok'] for r in rs)}/{len(rs)} | {min(wall):.2f}–{max(wall):.2f} | "
            f"{min(retx)}–{max(retx)} | {sum(r['nacks'] for r in rs)} | "
            f"{sum(r['duplicate_incs'] for r in rs)} | {sum(r['late_incs'] for r in rs)} | "
            f"{' / '.join(map(str, totals))} |")
    return lines + ["", machines_line(records)]


def table_faults_cases():
    records = read_records("faults")
    if not records:
        return no_records("faults", "scripts/reproduce.sh --only faults")
    inj = lambda x: "/".join(map(str, x)) if x else "-"
    lines = ["| policy | fault | dir | seed | clocks | result | wall s | retransmissions | "
             "NACKs | duplicate INCs | late INCs | rx injector: "
             "offered/dropped/duplicated/reordered/delayed | tx injector |",
             "|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|---|---|"]
    for r in records:
        lines.append(
            f"| {r['policy']} | `{r['fault']}` | {r['dir']} | {r['seed']} | {r['clocks']} | "
            f"{'OK' if r['ok'] else 'FAILED'} | {r['wall_s']:.2f} | {r['retransmits']} | "
            f"{r['nacks']} | {r['duplicate_incs']} | {r['late_incs']} | "
            f"{inj(r['rx_injector'])} | {inj(r['tx_injector'])} |")
    return lines + ["", machines_line(records)]
