#!/usr/bin/env python3
"""Unit tests for bench/lib/egress_report.py (bench/egress's figures):
parsing `kiln-bench-guest repeat` output, the per-case figures (failed
requests counted, not timed), nearest-rank percentiles, the ratios and
the table with a case missing.

    python3 tests/bench/test_egress_report.py      # from the top of the checkout
"""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "lib"))
import egress_report as er  # noqa: E402


class Parse(unittest.TestCase):
    def test_runs_and_walls_across_batches(self):
        text = "run 0 1500\nrun 1 20\nwall 0.5\nrun 0 2500\nwall 0.25\n"
        self.assertEqual(er.parse(text), ([(0, 1500), (1, 20), (0, 2500)], [0.5, 0.25]))

    def test_other_lines_skipped(self):
        text = "sh: wget: not found\nrun x 12\nrun 0\nwall\nwall fast\nrun 0 7 extra\n\nrun 0 9\n"
        self.assertEqual(er.parse(text), ([(0, 9)], []))


class Summarize(unittest.TestCase):
    def test_failed_requests_counted_not_timed(self):
        s = er.summarize([(0, 10000), (0, 30000), (4, 1)], [0.5])
        self.assertEqual((s["requests"], s["failed"]), (3, 1))
        self.assertAlmostEqual(s["mean_ms"], 20.0)
        self.assertAlmostEqual(s["req_per_s"], 4.0)  # 2 answered in 0.5 s

    def test_percentiles_nearest_rank(self):
        runs = [(0, (i + 1) * 1000) for i in range(100)]  # 1..100 ms
        s = er.summarize(runs, [5.05])
        self.assertEqual((s["p50_ms"], s["p99_ms"]), (50.0, 99.0))
        self.assertEqual(er.percentile([1.0, 2.0, 3.0], 99), 3.0)
        self.assertEqual(er.percentile([4.0], 50), 4.0)
        self.assertIsNone(er.percentile([], 50))

    def test_nothing_answered(self):
        s = er.summarize([(1, 5), (1, 6)], [0.1])
        self.assertEqual(s["failed"], 2)
        self.assertIsNone(s["req_per_s"])
        self.assertIsNone(s["mean_ms"])
        self.assertIsNone(s["p99_ms"])


class Ratios(unittest.TestCase):
    def test_pairs_and_added_latency(self):
        cases = {"a": er.summarize([(0, 10000)], [0.01]), "b": er.summarize([(0, 25000)], [0.025]),
                 "c": er.summarize([(0, 50000)], [0.05]), "d": er.summarize([(0, 100000)], [0.1])}
        r = er.ratios(cases)
        self.assertAlmostEqual(r["b/a"]["req_per_s"], 0.4)
        self.assertAlmostEqual(r["b/a"]["mean_ms"], 2.5)
        self.assertAlmostEqual(r["b/a"]["added_mean_ms"], 15.0)
        self.assertAlmostEqual(r["d/c"]["req_per_s"], 0.5)
        self.assertAlmostEqual(r["d/c"]["added_p50_ms"], 50.0)

    def test_missing_side_is_none(self):
        cases = {"a": er.summarize([(0, 10000)], [0.01]), "b": er.summarize([(1, 1)], [0.01])}
        r = er.ratios(cases)
        self.assertIsNone(r["b/a"]["req_per_s"])
        self.assertIsNone(r["d/c"]["mean_ms"])


class Report(unittest.TestCase):
    def test_table_json_and_missing_case(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "a.out"), "w") as f:
                f.write("run 0 10000\nrun 0 10000\nwall 0.02\n")
            with open(os.path.join(d, "b.out"), "w") as f:
                f.write("run 0 20000\nrun 0 20000\nwall 0.04\n")
            out = os.path.join(d, "res")
            os.environ["KILN_BENCH_DIR"] = out
            try:
                self.assertEqual(er.main(["egress_report.py", d, "n=2", "rounds=1", "x=y"]), 0)
            finally:
                del os.environ["KILN_BENCH_DIR"]
            with open(os.path.join(out, "egress.json")) as f:
                doc = json.load(f)
        self.assertEqual((doc["n"], doc["rounds"], doc["x"]), (2, 1, "y"))
        self.assertEqual(sorted(doc["cases"]), ["a", "b"])
        self.assertAlmostEqual(doc["ratios"]["b/a"]["req_per_s"], 0.5)
        lines = er.render(doc["cases"], doc["ratios"])
        self.assertTrue(any(l.startswith("(d) HTTPS intercepted") and "did not run" in l for l in lines))
        ratio_line = next(l for l in lines if l.startswith("requests per second"))
        self.assertEqual(ratio_line.split()[-3:], ["0.50", "-", "-"])

    def test_no_case_is_exit_1(self):
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(er.main(["egress_report.py", d]), 1)


if __name__ == "__main__":
    # cmocka's lines, so that tests/unit/run (make unit) counts these too.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from test_boot_profile import run_cmocka  # noqa: E402
    sys.exit(run_cmocka(sys.modules[__name__]))
