#!/usr/bin/python3
"""Summarises the fault matrix's per-case Markdown rows (docs/reliability.md).

  SERENE_FAULT_MATRIX_REPORT=/tmp/rows.md ctest --test-dir build -L faults
  /usr/bin/python3 scripts/fault_matrix_summary.py /tmp/rows.md

prints the per-fault table (directions and seeds summed) and then the rows,
sorted as the test lists its cases, for the appendix.
"""
import sys


def main(path):
    rows = []
    for line in open(path):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 13 or not cells[3].isdigit():
            continue
        rows.append(cells)
    if not rows:
        sys.exit(f"fault_matrix_summary: no case rows in {path}")
    groups = {}
    for r in rows:
        groups.setdefault((r[0], r[1]), []).append(r)

    def injector(cell):
        return [int(x) for x in cell.split("/")] if cell != "-" else [0] * 5

    print("| policy | fault | dirs | seeds | clocks | cases OK | wall s (min–max) | client "
          "retransmissions per run (min–max) | NACKs | duplicate INCs ignored | late INCs "
          "ignored | datagrams offered / dropped / duplicated / reordered / delayed (all cases) |")
    print("|---|---|---|---|---:|---:|---|---|---:|---:|---:|---|")
    for (policy, fault), rs in groups.items():
        dirs = ", ".join(dict.fromkeys(r[2] for r in rs))
        seeds = ",".join(dict.fromkeys(r[3] for r in rs))
        clocks = ",".join(dict.fromkeys(r[4] for r in rs))
        ok = sum(r[5] == "OK" for r in rs)
        wall = [float(r[6]) for r in rs]
        retx = [int(r[7]) for r in rs]
        totals = [0] * 5
        for r in rs:
            for col in (11, 12):
                totals = [a + b for a, b in zip(totals, injector(r[col]))]
        print(f"| {policy} | {fault} | {dirs} | {seeds} | {clocks} | {ok}/{len(rs)} | "
              f"{min(wall):.2f}–{max(wall):.2f} | {min(retx)}–{max(retx)} | "
              f"{sum(int(r[8]) for r in rs)} | {sum(int(r[9]) for r in rs)} | "
              f"{sum(int(r[10]) for r in rs)} | {' / '.join(map(str, totals))} |")
    print()
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
