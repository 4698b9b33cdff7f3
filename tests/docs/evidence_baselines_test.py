#!/usr/bin/python3
"""scripts/evidence.py's baseline and Python figures: Serene SYNC against
Gloo (demo-real:gloo) with its time split and the paired JCT ratio, the
training curves every 100 steps, the persistent straggler's per-rank
iterations, the PyTorch paths (record-pytorch) and the Python example
against serene-train (record-python-vs-cpp) with its 0.5 pt goal."""
import json
import os
import unittest

from scratch_data import ScratchDataTest
from evidence_lib import baselines, common, python_api, run_records, tables


def run(label, jct, iterations=750, curve=None, ranks=(750, 750, 750, 750)):
    return {"label": label, "policy": label.lower(), "ok": True, "job_completion_s": jct,
            "stop_reason": "target_reached", "iterations_rank0": iterations,
            "final_accuracy": 0.8405, "wait_total_s": 1.0, "barrier_wait_total_s": 0.5,
            "compute_per_iteration_s": 0.004, "comm_per_iteration_s": 0.006,
            "comm_share_pct": 60.0, "ranks": [{"iterations": n} for n in ranks],
            "timeline": [{"step": s, "accuracy": a} for s, a in (curve or [])] +
                        [{"step": iterations + 1, "accuracy": None}]}


def cells(table, label):
    rows = [line for line in table if line.startswith(f"| {label} |")]
    assert len(rows) == 1, table
    return [c.strip() for c in rows[0].strip("|").split("|")]


class BaselinesTest(ScratchDataTest):
    def record(self, seed, runs, scenario="gloo"):
        out = os.path.join(self.tmp.name, f"{scenario}-{seed}")
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "results.json"), "w") as f:
            json.dump({"runs": runs}, f)
        run_records.record_experiment(type("A", (), dict(out=out, figure="demo-real",
                                                        scenario=scenario, seed=seed,
                                                        commit=None, fresh=seed == 1))())

    def test_sync_over_each_gloo_run_is_paired_by_seed(self):
        # Seed 1: SYNC 5 s, Gloo 10 s, halving-doubling 6 s; seed 2 in the
        # reverse order: 6, 8, 5.
        self.record(1, [run("SYNC", 5), run("Gloo", 10), run("Gloo(halving-doubling)", 6)])
        self.record(2, [run("Gloo(halving-doubling)", 5), run("Gloo", 8), run("SYNC", 6)])
        table = baselines.table_baselines()
        self.assertEqual(cells(table, "Serene SYNC")[1], "5.50 (5.00–6.00)")
        self.assertEqual(cells(table, "Gloo")[2:6], ["4.00 (4.00–4.00)", "6.00 (6.00–6.00)",
                                                     "60.0 (60.0–60.0)", "50 (50–50)"])
        text = "\n".join(table)
        self.assertIn("over Gloo's, seed by seed: **0.62 (0.50–0.75)**", text)
        self.assertIn("over Gloo(halving-doubling)'s, seed by seed: **1.02 (0.83–1.20)**", text)

    def test_the_curves_stop_where_every_run_has_a_point(self):
        a = [(0, 0.17), (100, 0.77), (200, 0.80), (300, 0.81)]
        b = [(0, 0.17), (100, 0.79), (200, 0.80)]
        self.record(1, [run("SYNC", 5, 300, a), run("Gloo", 9, 300, a)])
        self.record(2, [run("SYNC", 5, 200, b), run("Gloo", 9, 200, b)])
        table = baselines.table_training_curve()
        self.assertEqual(cells(table, "100"), ["100"] + ["0.7800 (0.7700–0.7900)"] * 2)
        self.assertEqual([line.split("|")[1].strip() for line in table
                          if line.startswith("| ") and line[2].isdigit()], ["0", "100", "200"])
        self.assertIn("Serene SYNC: 250 (200–300)", "\n".join(table))
        self.assertIn("Largest difference between two runs of one seed at one evaluation: "
                      "0.0000.", "\n".join(table))
        self.record(3, [run("SYNC", 5, 200, b), run("Gloo", 9, 200, [(0, 0.17), (100, 0.7912)])])
        self.assertIn("at one evaluation: 0.0012.", "\n".join(baselines.table_training_curve()))

    def test_a_persistent_straggler_shows_each_ranks_iterations(self):
        for seed in (1, 2):
            self.record(seed, [run("SYNC", 19), run("ASYNC", 10, 800, ranks=(800, 974, 981, 360 +
                                                                             seed))],
                        scenario="straggler")
        table = tables.generators()["demo-real-straggler"]()
        head = [c.strip() for c in table[2].strip("|").split("|")]
        row = dict(zip(head, cells(table, "ASYNC")))
        self.assertEqual(row["iterations per rank"], "800, 974, 981, 362")
        self.assertEqual(row["JCT % of SYNC"], "52.6 (52.6–52.6)")
        self.assertFalse(any("best fixed policy" in line for line in table))  # no ADAPTIVE run


class PythonFiguresTest(ScratchDataTest):
    def test_pytorch_runs_are_recorded_and_paired_by_repetition(self):
        path = os.path.join(self.tmp.name, "runs.jsonl")
        with open(path, "w") as f:
            for rep, (gloo, serene) in enumerate([(0.020, 0.009), (0.016, 0.008)], 1):
                for config, comm in (("ddp-gloo-timed", gloo), ("ddp-serene", serene),
                                     ("ddp-gloo", None)):
                    f.write(json.dumps({
                        "config": config, "rep": rep, "world_size": 4, "batch": 32,
                        "steps": 240, "eval_images": 2000, "target": 0.75,
                        "median_step_s": 0.1, "median_comm_step_s": comm,
                        "comm_step_s": [comm] if comm else [],
                        "comm_s_per_step": 2 * comm if comm else float("nan"),
                        "time_to_target_s": 20.0 if rep == 1 else None,
                        "final_accuracy": 0.81}) + "\n")
        python_api.record_pytorch(type("A", (), dict(out=path))())
        records = common.read_records("pytorch")
        self.assertEqual(len(records), 6)
        self.assertTrue(all(r["commit"] and r["cpu"] for r in records))
        table = python_api.table_pytorch()
        self.assertEqual(cells(table, "ddp-gloo")[1:6], ["2", "100.0 (100.0–100.0)", "–", "–",
                                                        "20.0 (1/2)"])
        self.assertIn("(median step) over ddp-gloo-timed's, paired by repetition: "
                      "**0.47 (0.45–0.50)**", "\n".join(table))
        # ddp-gloo-timed comes before ddp-serene, as the configurations are listed.
        order = [line.split("|")[1].strip() for line in table if line.startswith("| ddp")]
        self.assertEqual(order, ["ddp-gloo", "ddp-gloo-timed", "ddp-serene"])

    def write_pair(self, seed, cpp, py):
        out = os.path.join(self.tmp.name, f"pair-{seed}")
        os.makedirs(out, exist_ok=True)
        for name, acc in (("cpp-0.json", cpp), ("py.json", py)):
            with open(os.path.join(out, name), "w") as f:
                json.dump({"iterations": 1000, "timeline": [{"step": 0, "accuracy": 0.1},
                                                             {"step": 1000, "accuracy": acc}]}, f)
        return out

    def test_the_python_example_is_held_to_half_a_point_at_every_seed(self):
        record = lambda seed, fresh: python_api.record_python_vs_cpp(type("A", (), dict(
            out=self.write_pair(seed, 0.8447, 0.8447 + 0.001 * seed), seed=seed,
            fresh=fresh))())
        record(1, True)
        record(2, False)
        text = "\n".join(python_api.table_python_vs_cpp())
        self.assertIn("| 2 | 1000 | 0.8447 | 0.8467 | +0.20 pt |", text)
        self.assertIn("Largest difference 0.20 pt over 2 seeds; goal within 0.5 pt at every "
                      "seed: met.", text)
        python_api.record_python_vs_cpp(type("A", (), dict(
            out=self.write_pair(3, 0.8447, 0.8387), seed=3, fresh=False))())
        self.assertIn("0.60 pt over 3 seeds; goal within 0.5 pt at every seed: not met.",
                      "\n".join(python_api.table_python_vs_cpp()))

    def test_a_missing_output_is_refused_with_what_writes_it(self):
        with self.assertRaises(SystemExit):
            python_api.record_python_vs_cpp(type("A", (), dict(
                out=os.path.join(self.tmp.name, "none"), seed=1, fresh=True))())
        with self.assertRaises(SystemExit):
            python_api.record_pytorch(type("A", (), dict(out=os.path.join(self.tmp.name, "x")))())


if __name__ == "__main__":
    unittest.main()
