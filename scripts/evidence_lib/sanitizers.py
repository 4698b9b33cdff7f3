"""The sanitizer builds (sanitizers): record-sanitizers and its table."""

from .common import machines_line, no_records, read_records, record_summary_lines


def record_sanitizers(args):
    """scripts/sanitizers.sh's summary: a mode's run replaces its earlier one."""
    record_summary_lines(args.out, "sanitizers", lambda run: run["mode"],
                         "SERENE_SANITIZERS_SUMMARY=FILE scripts/sanitizers.sh")


def table_sanitizers():
    records = read_records("sanitizers")
    if not records:
        return no_records("sanitizers", "scripts/reproduce.sh --only sanitizers")
    mins = lambda s: f"{s // 60} min {s % 60:02d} s"
    lines = ["| mode | result | tests | reports | build | tests' time |",
             "|---|---|---:|---:|---|---|"]
    for r in sorted(records, key=lambda r: r["mode"]):
        lines.append(f"| {r['mode']} | {'passed' if r['passed'] else '**failed**'} | "
                     f"{r['tests'] - r['failed']}/{r['tests']} passed | {r['reports']} | "
                     f"{mins(r['build_s'])} | {mins(r['tests_s'])} |")
    return lines + ["", machines_line(records)]
