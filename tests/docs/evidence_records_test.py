#!/usr/bin/python3
"""scripts/evidence.py's recorders of the benchmarks behind performance.md and
reliability.md: Google Benchmark JSON (record-bench), the scale sweep
(record-scale), the fault matrix's rows (record-faults), and of p4.md's
checks of the P4 program in BMv2 (record-p4), of serene-sim sweeps run in
several processes (record-sim), of the soak (record-soak) and fuzzing
(record-fuzz) runs and the sanitizer builds (record-sanitizers), of
reproduce.sh's parts' times
(record-time), and the tables made from them."""
import argparse
import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "scripts"))
from evidence_lib import (common, durations, faults, fuzz, micro, p4, run_records,  # noqa: E402
                          sanitizers, scale, soak)
from scratch_data import ScratchDataTest  # noqa: E402


class RecordersTest(ScratchDataTest):
    def write(self, name, text):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_bench_keeps_every_repetition_and_drops_the_aggregates(self):
        runs = [{"name": "BM_IncRow/256", "run_name": "BM_IncRow/256", "run_type": "iteration",
                 "repetition_index": i, "iterations": 1000, "real_time": t, "cpu_time": t,
                 "time_unit": "ns", "bytes_per_second": 1024 * 1e9 / t}
                for i, t in enumerate([110.0, 100.0, 130.0])]
        runs.append(dict(runs[0], run_type="aggregate", aggregate_name="median", real_time=1e9))
        out = self.write("b.json", json.dumps({"context": {"executable": "x/dataplane_bench"},
                                               "benchmarks": runs}))
        micro.record_bench(argparse.Namespace(out=out, binary=None))
        records = common.read_records("micro")
        self.assertEqual(len(records), 3)
        table = micro.table_micro("dataplane_bench")()
        row = [line for line in table if line.startswith("| `BM_IncRow/256` |")][0]
        self.assertIn("| 110 ns (100 ns–130 ns) |", row)
        self.assertIn("| 9.3 (7.9–10.2) |", row)
        self.assertIn("| `BM_IncRow/4096` | INC, row of 4096 | not measured |", "\n".join(table))

    def test_a_failed_benchmark_is_refused(self):
        out = self.write("b.json", json.dumps({"context": {"executable": "dataplane_bench"},
                                               "benchmarks": [{"name": "BM_X", "run_name": "BM_X",
                                                               "error_occurred": True}]}))
        with self.assertRaises(SystemExit):
            micro.record_bench(argparse.Namespace(out=out, binary=None))
        self.assertEqual(common.read_records("micro"), [])

    def test_scale_points_are_medians_over_runs(self):
        lines = [{"ranks": 4, "run": i, "clocks": 400, "elements": 1000, "clocks_per_s": r,
                  "switch_cpu_ms_per_clock": 0.1, "switch_cpu_us_per_rank_clock": 25.0,
                  "read_retransmits": 0, "clock_retransmits": c, "wall_s": 0.2}
                 for i, (r, c) in enumerate([(2000, 0), (2600, 3), (2400, 1)], 1)]
        out = self.write("s.jsonl", "\n".join(json.dumps(x) for x in lines) + "\n")
        scale.record_scale(argparse.Namespace(out=out))
        row = [line for line in scale.table_scale() if line.startswith("| 4 |")][0]
        self.assertIn("| 2400.0 (2000.0–2600.0) |", row)
        self.assertTrue(row.endswith("| 0 | 4 |"), row)

    ROWS = """| policy | fault | dir | seed | clocks | result | wall s | retransmissions | NACKs | duplicate INCs | late INCs | rx | tx |
|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|---|---|
| sync | `drop=0.05` | rx | 1 | 30 | OK | 0.43 | 42 | 63 | 0 | 0 | 1784/97/0/0/0 | - |
| sync | `drop=0.05` | tx | 2 | 30 | OK | 0.24 | 11 | 0 | 0 | 0 | - | 558/27/0/0/0 |
| sync | `drop=0.05` | both | 1 | 30 | FAILED | 9.00 | 80 | 5 | 1 | 2 | 10/1/0/0/0 | 20/2/0/0/0 |
"""

    def test_fault_rows_are_summed_per_fault(self):
        faults.record_faults(argparse.Namespace(out=self.write("f.md", self.ROWS)))
        self.assertEqual(len(common.read_records("faults")), 3)
        summary = faults.table_faults_summary()
        self.assertIn("3 cases, 2 passed", summary[0])
        row = [line for line in summary if line.startswith("| sync |")][0]
        self.assertEqual(row, "| sync | `drop=0.05` | rx, tx, both | 1,2 | 30 | 2/3 | 0.24–9.00 | "
                              "11–80 | 68 | 1 | 2 | 2372 / 127 / 0 / 0 / 0 |")
        cases = faults.table_faults_cases()
        self.assertIn("| sync | `drop=0.05` | both | 1 | 30 | FAILED | 9.00 | 80 | 5 | 1 | 2 | "
                      "10/1/0/0/0 | 20/2/0/0/0 |", cases)

    def test_a_malformed_fault_row_is_refused(self):
        bad = self.ROWS.replace("1784/97/0/0/0", "1784/97/0")
        with self.assertRaises(SystemExit):
            faults.record_faults(argparse.Namespace(out=self.write("f.md", bad)))
        with self.assertRaises(SystemExit):
            faults.record_faults(argparse.Namespace(out=self.write("g.md", "no rows\n")))

    def record_p4(self, check, text):
        p4.record_p4(argparse.Namespace(out=self.write(check + ".log", text), check=check,
                                        started=None))

    def test_p4_checks_are_recorded_from_their_outputs(self):
        self.record_p4("compile", "serene.p4 with SERENE_MAX_W=64: compiled, no warnings\n"
                                  "serene.p4 with SERENE_MAX_W=32: compiled, no warnings\n")
        self.record_p4("conformance", "--- 1. smoke.py\n--- 2. golden packets\nok\n"
                                      "conformance (bmv2): all passed\n")
        self.record_p4("training", "software switch: accuracy 0.6960\n"
                                   "P4 switch (BMv2): accuracy 0.6960\n"
                                   "train.sh: the same model, byte for byte (318040 bytes, sha256 "
                                   "0123456789abcdef), and the same accuracy through both "
                                   "switches after 20 steps\n")
        bench = '{{"clocks": 100, "rows": 100, "software_rps": {}, "bmv2_rps": {}, ' \
                '"software_over_bmv2": 0}}\n'
        self.record_p4("rate", "noise\n" + "".join(bench.format(s, b) for s, b in
                                                   [(600000, 2000), (500000, 1000),
                                                    (700000, 1400)]))
        table = "\n".join(p4.table_p4())
        self.assertIn("| compile | `p4/compile_check.sh`: p4c-bm2-ss at SERENE_MAX_W = 64, 32 |",
                      table)
        self.assertIn("1. smoke.py; 2. golden packets | all 2 sections passed |", table)
        self.assertIn("(318,040 bytes, sha256 0123456789abcdef…), accuracy 0.6960 |", table)
        self.assertIn("simple_switch 1,400 (1,000–2,000) requests/s (window 8), serene-switch "
                      "600,000 (500,000–700,000) (window 128): 500 (300–500) ×", table)

    def test_a_p4_check_without_its_result_line_is_refused(self):
        for check, text in (("compile", "error: serene.p4(12): syntax error\n"),
                            ("conformance", "--- 1. smoke.py\nFAIL: JOIN\n"),
                            ("training", "software switch: accuracy 0.6960\n"),
                            ("rate", "serene-bench failed\n")):
            with self.assertRaises(SystemExit, msg=check):
                self.record_p4(check, text)
        self.assertEqual(common.read_records("p4"), [])

    def sim_output(self, name, seeds, label="SYNC", jct=lambda seed: seed + 0.5):
        """A serene-sim --seeds output directory with one run per seed."""
        out = os.path.join(self.tmp.name, name)
        for seed in seeds:
            os.makedirs(os.path.join(out, f"seed-{seed}"))
            run = {"label": label, "policy": "sync" if label == "SYNC" else "policies/a.lua",
                   "ok": True, "job_completion_s": jct(seed),
                   "stop_reason": "target_reached", "iterations_rank0": 100 * seed}
            with open(os.path.join(out, f"seed-{seed}", "results.json"), "w") as f:
                json.dump({"scenario": {"seed": seed}, "runs": [run]}, f)
        return out

    def record_sim(self, out, merge=False, witness=None):
        run_records.record_sim(argparse.Namespace(out=out, figure="policies-sim", scenario="demo",
                                                  commit=None, label=None, merge=merge,
                                                  witness=witness))

    def test_a_policy_rerun_keeps_the_fixed_runs_its_witness_repeats(self):
        self.record_sim([self.sim_output("fixed", [1, 2])])
        self.record_sim([self.sim_output("old", [1, 2], label="ADAPTIVE", jct=lambda s: 9.0)],
                        merge=True)
        new = self.sim_output("new", [1, 2], label="ADAPTIVE", jct=lambda s: 7.0)
        self.record_sim([new], merge=True, witness=self.sim_output("witness", [1]))
        jct = {(r["label"], r["seed"]): r["jct_s"] for r in common.read_records("policies-sim")}
        self.assertEqual(jct, {("SYNC", 1): 1.5, ("SYNC", 2): 2.5, ("ADAPTIVE", 1): 7.0,
                               ("ADAPTIVE", 2): 7.0})
        # A fixed run that no longer repeats its record: nothing is recorded.
        moved = self.sim_output("moved", [1], jct=lambda seed: 1.25)
        newer = self.sim_output("newer", [1, 2], label="ADAPTIVE", jct=lambda s: 5.0)
        with self.assertRaises(SystemExit):
            self.record_sim([newer], merge=True, witness=moved)
        with self.assertRaises(SystemExit):  # a witness without --merge has nothing to keep
            self.record_sim([newer], witness=self.sim_output("witness2", [1]))
        self.assertEqual(jct, {(r["label"], r["seed"]): r["jct_s"]
                               for r in common.read_records("policies-sim")})

    def test_a_sweep_run_in_several_processes_is_recorded_as_one_in_seed_order(self):
        g1, g2 = self.sim_output("g1", [1, 3, 10]), self.sim_output("g2", [2, 4])
        run_records.record_sim(argparse.Namespace(out=[g1, g2], figure="policies-sim",
                                                  scenario="demo", commit=None, label=None,
                                                  merge=False, witness=None))
        records = common.read_records("policies-sim")
        self.assertEqual([r["seed"] for r in records], [1, 2, 3, 4, 10])
        self.assertEqual([r["iterations"] for r in records], [100, 200, 300, 400, 1000])
        with self.assertRaises(SystemExit):  # a directory without results is refused
            run_records.record_sim(argparse.Namespace(out=[g1, self.tmp.name],
                                                      figure="policies-sim", scenario="demo",
                                                      commit=None, label=None, merge=False, witness=None))
        self.assertEqual(len(common.read_records("policies-sim")), 5)

    def record_time(self, part, seconds, quick=False):
        durations.record_time(argparse.Namespace(part=part, started=time.time() - seconds,
                                                 quick=quick))

    def test_parts_times_add_up_to_a_full_and_a_quick_run(self):
        parts = durations.reproduce_parts(False)
        quick = durations.reproduce_parts(True)
        self.assertIn("policies-sim:cnn", parts)
        self.assertIn("comm", quick)
        self.assertLess(set(quick), set(parts))
        self.record_time("comm", 600)
        self.record_time("comm", 90, quick=True)
        self.record_time("policies-sim:demo", 3000)
        self.record_time("policies-sim:demo", 1200)  # a later run replaces the part's time
        table = durations.table_durations()
        self.assertIn("| comm | 10 min |", "\n".join(table))
        self.assertIn("| policies-sim:demo | 20 min |", "\n".join(table))
        self.assertIn("| policies-sim:cnn | not timed yet | – |", table)
        summary = [line for line in table if line.startswith("A full run")][0]
        self.assertIn("A full run: more than 30 min, the sum of the 2 parts timed so far", summary)
        self.assertIn("A quick run (`--quick`): more than 2 min, the sum of the 1 part timed",
                      summary)
        for part in parts:
            self.record_time(part, 3600)
        summary = [line for line in durations.table_durations() if line.startswith("A full")][0]
        self.assertIn(f"A full run: {len(parts)} h 00 min, the sum of its {len(parts)} parts.",
                      summary)

    def test_a_part_reproduce_sh_does_not_have_is_refused(self):
        with self.assertRaises(SystemExit):
            self.record_time("policies-sim:nonesuch", 10)
        self.assertEqual(common.read_records("durations"), [])

    def test_a_soak_run_is_recorded_with_its_books(self):
        summary = {"seconds": 601, "rounds": 74, "runs_ok": 148, "runs": 148, "jobs": 2,
                   "workers": 8, "elements": 20000, "rows": 79, "clocks": 40,
                   "clocks_total": 5920, "inc_rows_applied": 4027025,
                   "duplicates_ignored": 2013079, "retransmissions": 3300000, "nacks": 108000,
                   "fault": "drop=0.05,dir=both", "rss_first_kib": 29594, "rss_last_kib": 30618,
                   "rss_max_kib": 30720, "rss_slope_kib_per_min": 12.3, "rss_margin_kib": 4096,
                   "violations": 0,
                   "exit_faults": {"rx": {"offered": 13600000, "delivered": 12918000,
                                          "dropped": 682000, "duplicated": 0, "reordered": 5,
                                          "delayed": 7},
                                   "tx": {"offered": 7300000, "delivered": 6937000,
                                          "dropped": 363000, "duplicated": 0, "reordered": 0,
                                          "delayed": 0}}}
        path = self.write("summary.json", json.dumps(summary))
        soak.record_soak(argparse.Namespace(out=path, seconds=600))
        [row] = [line for line in soak.table_soak() if line.startswith("| `scripts")]
        self.assertIn("| 74 | 148/148 | 5,920 | 4,027,025 | 2,013,079 | 3,300,000 / 108,000 |",
                      row)
        self.assertIn("13.6 M / 7.3 M offered; 682 k / 363 k dropped", row)
        self.assertIn("offered + duplicated = delivered + dropped: yes", row)
        self.assertIn("28.9 MiB, last 29.9, max 30.0 MiB", row)
        # Books that do not balance say so.
        summary["exit_faults"]["tx"]["delivered"] -= 1
        soak.record_soak(argparse.Namespace(out=self.write("s2.json", json.dumps(summary)),
                                            seconds=600))
        self.assertEqual(len(common.read_records("soak")), 1)
        self.assertIn("dropped: **no**", "\n".join(soak.table_soak()))

    def test_fuzz_runs_are_recorded_per_target_and_length(self):
        line = lambda target, seconds, execs, findings=0: json.dumps({
            "target": target, "seconds": seconds, "executions": execs, "edges": 1775,
            "features": 11339, "corpus_files": 1175, "corpus_bytes": 95232,
            "findings": findings}) + "\n"
        fuzz.record_fuzz(argparse.Namespace(out=self.write(
            "f1.jsonl", line("decode", 600, 62_700_000) + line("pipeline", 600, 229_000))))
        fuzz.record_fuzz(argparse.Namespace(out=self.write(
            "f2.jsonl", line("pipeline", 600, 231_000, findings=1))))
        table = fuzz.table_fuzz()
        rows = [line for line in table if line.startswith("| decode") or
                line.startswith("| pipeline")]
        self.assertEqual(len(rows), 2)  # the second pipeline run replaced the first
        self.assertIn("| decode | 600 s | 62.70 M | 104,500 | 1775 / 11339 | 1175 inputs, "
                      "93.0 KiB | none |", rows[0])
        self.assertIn("| pipeline | 600 s | 231.0 k | 385 |", rows[1])
        self.assertTrue(rows[1].endswith("| **yes** |"))
        with self.assertRaises(SystemExit):
            fuzz.record_fuzz(argparse.Namespace(out=self.write("empty.jsonl", "")))

    def test_sanitizer_modes_are_recorded_with_their_counts(self):
        line = lambda mode, tests, failed, reports: json.dumps({
            "mode": mode, "passed": failed == 0 and reports == 0, "tests": tests,
            "failed": failed, "reports": reports, "build_s": 540, "tests_s": 178,
            "ctest_args": ""}) + "\n"
        sanitizers.record_sanitizers(argparse.Namespace(out=self.write(
            "s.jsonl", line("asan", 643, 0, 0) + line("tsan", 277, 1, 2))))
        table = sanitizers.table_sanitizers()
        self.assertIn("| asan | passed | 643/643 passed | 0 | 9 min 00 s | 2 min 58 s |", table)
        self.assertIn("| tsan | **failed** | 276/277 passed | 2 |", "\n".join(table))
        with self.assertRaises(SystemExit):
            sanitizers.record_sanitizers(argparse.Namespace(out=self.write("none.jsonl", "\n")))


if __name__ == "__main__":
    unittest.main()
