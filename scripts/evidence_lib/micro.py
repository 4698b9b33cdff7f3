"""The micro-benchmarks (micro): Google Benchmark outputs (record-bench), their
tables and flood_bench's ratios."""
import json
import os
import statistics

from .common import (fail, fmt_range, group_by, machine, machines_line, no_records, read_records,
                     replace_records)


# Google Benchmark outputs (--benchmark_out_format=json): one record per
# repetition of each benchmark; the binary is the scenario.
BENCH_META = {"name", "family_index", "per_family_instance_index", "run_name", "run_type",
              "repetitions", "repetition_index", "threads", "iterations", "time_unit",
              "aggregate_name", "aggregate_unit", "label", "error_occurred", "error_message"}


def record_bench(args):
    """Records a Google Benchmark JSON output (run with
    --benchmark_repetitions=N): every repetition of every benchmark, its
    times and counters. The binary's earlier records are replaced."""
    try:
        with open(args.out) as f:
            j = json.load(f)
        runs = [b for b in j["benchmarks"] if b.get("run_type", "iteration") == "iteration"]
    except (OSError, ValueError, KeyError) as e:
        fail(f"{args.out}: not a Google Benchmark JSON output ({e})")
    errors = [b["name"] for b in runs if b.get("error_occurred")]
    if errors:
        fail(f"{args.out}: benchmarks failed: {', '.join(errors)}")
    if not runs:
        fail(f"{args.out}: no benchmark runs")
    m = machine()
    binary = args.binary or os.path.basename(j["context"]["executable"])
    records = []
    for b in runs:
        r = dict(m, figure="micro", scenario=binary, source=binary,
                 benchmark=b["run_name"], repetition=b.get("repetition_index", 0),
                 iterations=b["iterations"], time_unit=b["time_unit"])
        r.update({k: v for k, v in b.items()
                  if k not in BENCH_META and isinstance(v, (int, float))})
        records.append(r)
    replace_records("micro", binary, records)


# The micro-benchmarks docs/performance.md shows: benchmark -> what it is.
# Times are CPU time per iteration (single-threaded loops), except the
# benchmarks named .../real_time, which are wall-clock time.
MICRO = {
    "dataplane_bench": [
        ("BM_IncRow/256", "INC of a row of 256 values (applied)"),
        ("BM_IncRow/4096", "INC, row of 4096"),
        ("BM_ReadRow/256", "READ of a row of 256 (into the Output)"),
        ("BM_ReadRow/4096", "READ, row of 4096"),
        ("BM_DropBadKey", "packet with a wrong key (dropped)"),
        ("BM_SyncClock/4", "SYNC round of 4 ranks (4 INC + 4 CLOCK)"),
        ("BM_SyncClock/64", "SYNC round of 64 ranks"),
        ("BM_SyncClock/256", "SYNC round of 256 ranks"),
        ("BM_SyncBarrierRound/256", "the barrier alone: SYNC round of 256 CLOCKs"),
        ("BM_SspStragglerClock/256", "SSP clock of 256 ranks with a straggler"),
        ("BM_SyncModelClock/elements:1000000/row:4096/burst:1",
         "a whole SYNC clock of 4 ranks, 1M values, rows of 4096, reply group"),
        ("BM_SyncModelClock/elements:8000000/row:4096/burst:1",
         "the same, 8M values (a 64 MB table: out of the caches)"),
        ("BM_SyncModelClock/elements:1000000/row:362/burst:1",
         "the same, 1M values, rows of 362 (MTU-sized), one Process per packet"),
        ("BM_SyncModelClock/elements:1000000/row:362/burst:44",
         "the same, served in bursts of 44 INCs (a GSO train)"),
        ("BM_SyncModelClock/elements:8000000/row:362/burst:44",
         "the same, 8M values, bursts of 44"),
    ],
    "conversion_bench": [
        ("BM_StoreValues/79510", "int32 → wire (StoreValues), 79,510 values"),
        ("BM_StoreValues/1000000", "int32 → wire, 1M values"),
        ("BM_LoadValues/79510", "wire → int32 (LoadValues), 79,510 values"),
        ("BM_LoadValues/1000000", "wire → int32, 1M values"),
        ("BM_Quantize/79510", "float → fixed point (Quantize), 79,510 values"),
        ("BM_Quantize/1000000", "float → fixed point, 1M values"),
        ("BM_Dequantize/79510", "fixed point → float (Dequantize), 79,510 values"),
        ("BM_Dequantize/1000000", "fixed point → float, 1M values"),
    ],
    "telemetry_bench": [
        ("BM_TelemetrySnapshot/workers:4/serialize:0",
         "Pipeline::Telemetry, 4 ranks (the part under the job's lock)"),
        ("BM_TelemetrySnapshot/workers:256/serialize:0", "Pipeline::Telemetry, 256 ranks"),
        ("BM_TelemetrySnapshot/workers:4/serialize:1",
         "snapshot + the API message + serialization, 4 ranks"),
        ("BM_TelemetrySnapshot/workers:256/serialize:1", "the same, 256 ranks"),
        ("BM_SyncRoundWithTelemetry/workers:4/period_us:0/real_time",
         "SYNC round of 4 ranks, no telemetry reader"),
        ("BM_SyncRoundWithTelemetry/workers:4/period_us:100000/real_time",
         "the same, a 10 Hz reader"),
        ("BM_SyncRoundWithTelemetry/workers:4/period_us:1000/real_time",
         "the same, a 1 kHz reader"),
        ("BM_SyncRoundWithTelemetry/workers:256/period_us:0/real_time",
         "SYNC round of 256 ranks, no reader"),
        ("BM_SyncRoundWithTelemetry/workers:256/period_us:100000/real_time",
         "the same, a 10 Hz reader"),
        ("BM_SyncRoundWithTelemetry/workers:256/period_us:1000/real_time",
         "the same, a 1 kHz reader"),
    ],
}
NS_PER = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}


def fmt_ns(ns):
    """A time in ns, in the unit that reads best, 3 significant digits."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def table_micro(binary):
    def make():
        records = [r for r in read_records("micro") if r["scenario"] == binary]
        if not records:
            return no_records("micro", "scripts/reproduce.sh --only micro", binary)
        by = group_by(records, "benchmark")
        reps = sorted({len(v) for v in by.values()})
        lines = [f"Time per iteration, median (min–max) over {'/'.join(map(str, reps))} "
                 "repetitions of one run; GB/s of values where the benchmark counts bytes.", "",
                 "| benchmark | what | time | GB/s |", "|---|---|---|---|"]
        for name, what in MICRO[binary]:
            rs = by.get(name)
            if not rs:
                lines.append(f"| `{name}` | {what} | not measured | |")
                continue
            key = "real_time" if name.endswith("/real_time") else "cpu_time"
            times = [r[key] * NS_PER[r["time_unit"]] for r in rs]
            gbs = [r["bytes_per_second"] / 1e9 for r in rs if r.get("bytes_per_second")]
            lines.append(f"| `{name}` | {what} | {fmt_range(times, fmt_ns)} | "
                         f"{fmt_range(gbs, lambda x: f'{x:.1f}') if gbs else ''} |")
        for name, bound_ns in MICRO_TARGETS.get(binary, []):
            rs = by.get(name)
            if rs:
                med = statistics.median(r["cpu_time"] * NS_PER[r["time_unit"]] for r in rs)
                lines += ["", f"`{name}` ≤ {fmt_ns(bound_ns)}: "
                          f"{'met' if med <= bound_ns else 'not met'} (median {fmt_ns(med)})."]
        return lines + ["", machines_line(records)]
    return make


# Targets some micro-benchmarks are held to (the barrier's: a SYNC round of
# 256 ranks, 256 INCs and CLOCKs, within 50 µs; 865e9b0).
MICRO_TARGETS = {"dataplane_bench": [("BM_SyncClock/256", 50e3)]}


def table_flood():
    """flood_bench's ratios, median (min–max) over the repetitions: the job's
    rounds per second with a keyless-JOIN flood beside it over without."""
    records = [r for r in read_records("micro") if r["scenario"] == "flood_bench"]
    if not records:
        return no_records("micro", "scripts/reproduce.sh --only micro", "flood_bench")
    f2 = lambda x: f"{x:.2f}"
    get = lambda key: [r[key] for r in records if key in r]
    med = statistics.median(get("ratio_quiet"))
    pinned = sum(1 for r in records if r.get("pinned"))
    return [f"{len(records)} repetitions of one run ({pinned} with both threads pinned to "
            "their CPUs); median (min–max).", "",
            "| `ratio_quiet` (flooded / quiet rounds per second) | `spin_quiet` (a spinning "
            "neighbour / quiet) | keyless JOINs dropped per second | within 10 % (≥ 0.9) |",
            "|---|---|---|---|",
            f"| {fmt_range(get('ratio_quiet'), f2)} | {fmt_range(get('spin_quiet'), f2)} | "
            f"{fmt_range(get('flood_pps'), lambda x: f'{x / 1e6:.1f} M')} | "
            f"{'met' if med >= 0.9 else 'not met'} (median) |",
            "", machines_line(records)]
