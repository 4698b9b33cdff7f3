#!/usr/bin/python3
"""scripts/evidence.py's side-by-side policy tables (policies-sim and
paper-scale): every column a % of the same seed's SYNC run, median (min–max)
over seeds; the paper's figure beside ours; timing-only records without
accuracy or target columns; the adaptive verdict against the best fixed
policy in hindsight."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "scripts"))
from evidence_lib import policies  # noqa: E402


def rec(seed, label, jct, wait, barrier, accuracy=0.85, reached=True):
    return {"seed": seed, "label": label, "jct_s": jct, "wait_total_s": wait,
            "barrier_wait_total_s": barrier, "iterations": 1250, "final_accuracy": accuracy,
            "reached": reached}


def cells(table, label):
    rows = [line for line in table if line.startswith(f"| {label} |")]
    assert len(rows) == 1, table
    return [c.strip() for c in rows[0].strip("|").split("|")]


class PolicyTableTest(unittest.TestCase):
    # Two seeds: SYNC 10 s and 20 s; ASYNC 7.5 s and 12 s (75 % and 60 %).
    RECORDS = [rec(1, "SYNC", 10, 4, 2), rec(2, "SYNC", 20, 8, 4),
               rec(1, "ASYNC", 7.5, 1, 0), rec(2, "ASYNC", 12, 4, 0.4)]

    def test_every_column_is_paired_with_its_seeds_sync(self):
        table = policies.policy_table(self.RECORDS, waits=True)
        head = [c.strip() for c in table[2].strip("|").split("|")]
        row = dict(zip(head, cells(table, "ASYNC")))
        self.assertEqual(row["JCT % of SYNC"], "67.5 (60.0–75.0)")
        self.assertEqual(row["waiting % of SYNC"], "37.5 (25.0–50.0)")
        self.assertEqual(row["barrier wait % of SYNC"], "5.0 (0.0–10.0)")
        self.assertEqual(row["reached target"], "2/2")

    def test_the_papers_figure_stands_beside_ours(self):
        table = policies.policy_table(self.RECORDS, paper={"ASYNC": 55.5})
        head = [c.strip() for c in table[2].strip("|").split("|")]
        self.assertEqual(head[:3], ["run", "JCT % of SYNC", "paper"])
        self.assertEqual(cells(table, "ASYNC")[2], "55.5")
        self.assertEqual(cells(table, "SYNC")[2], "")

    def test_timing_only_runs_have_no_accuracy_or_target(self):
        timing = [dict(r, final_accuracy=None, reached=False) for r in self.RECORDS]
        table = policies.policy_table(timing, waits=True)
        self.assertIn("Timing only", table[0])
        self.assertNotIn("final accuracy", table[2])
        self.assertNotIn("reached target", table[2])
        nan = [dict(r, final_accuracy=float("nan")) for r in self.RECORDS]
        self.assertNotIn("final accuracy", policies.policy_table(nan)[2])

    def test_the_verdict_holds_adaptive_to_the_best_fixed_policy(self):
        records = self.RECORDS + [rec(1, "ADAPTIVE", 7.5 * 1.02, 1, 0),
                                  rec(2, "ADAPTIVE", 12 * 1.10, 4, 0)]
        line = policies.adaptive_verdict(records, bound=1.05)[0]
        self.assertIn("ASYNC: JCT ratio 1.060 (1.020–1.100)", line)
        self.assertIn("not met", line)
        self.assertIn(": met", policies.adaptive_verdict(records, bound=1.07)[0])


if __name__ == "__main__":
    unittest.main()
