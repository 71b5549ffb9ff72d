#!/usr/bin/env python3
"""Unit tests for bench/lib/targets.py: the benches' saved results in,
the performance targets' rows out; missing, partial and hostile files too.

    python3 tests/bench/test_targets.py      # from the top of the checkout
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "lib"))
import targets  # noqa: E402

BOOT = {"harness": "nested", "ratios": {
    "bzImage": 0.45, "bzImage exits.total": 0.8,
    "vmlinux (PVH)": 0.6, "vmlinux (PVH) exits.total": 0.25}}
SNAPSHOT = {
    "cold_boot_ms": {"median": 2000.0}, "wake_ms": {"median": 80.0},
    "fork_ms": {"median": 100.0}, "pool_create_ms": {"median": 30.0},
    "incremental": {"first": {"memory_stored_bytes": 100 << 20, "snapshot_ms": 1000.0},
                    "second": {"memory_stored_bytes": 12 << 20, "snapshot_ms": 150.0}}}
DEVICES = {"figures": {"vsock_host_to_guest": {"ratio": 1.6}}}


def by_figure(table):
    return {r["figure"]: r for r in table}


class TargetRows(unittest.TestCase):
    def test_every_row_of_the_issue_is_there_and_judged(self):
        t = by_figure(targets.rows(BOOT, SNAPSHOT, DEVICES))
        self.assertEqual(len(t), 10)
        self.assertTrue(t["boot wall, kiln / QEMU microvm (bzImage)"]["met"])
        self.assertFalse(t["boot wall, kiln / QEMU microvm (vmlinux (PVH))"]["met"])
        self.assertFalse(t["VM exits per boot, kiln / QEMU microvm (bzImage)"]["met"])
        self.assertTrue(t["VM exits per boot, kiln / QEMU microvm (vmlinux (PVH))"]["met"])
        self.assertAlmostEqual(t["wake to ready agent / cold boot"]["value"], 0.04)
        self.assertTrue(t["wake to ready agent / cold boot"]["met"])
        self.assertFalse(t["fork to ready agent / cold boot"]["met"])  # 0.05 > 0.03
        self.assertTrue(t["create through the warm pool / cold create"]["met"])
        self.assertAlmostEqual(t["second checkpoint after 10 MiB in 1 GiB: stored"]["value"], 12.0)
        self.assertTrue(t["second checkpoint: pause / the first's"]["met"])
        self.assertTrue(t["vsock host->guest, kiln / QEMU"]["met"])  # >= 1.5

    def test_a_bench_not_run_is_no_data_not_a_miss(self):
        t = targets.rows(None, SNAPSHOT, None)
        missing = [r for r in t if r["met"] is None]
        self.assertEqual({r["bench"] for r in missing}, {"boot", "devices"})
        text = "\n".join(targets.render(t))
        self.assertIn("no data: make bench-boot", text)
        self.assertIn("no data: make bench-devices", text)

    def test_hostile_or_old_files_give_no_data(self):
        odd = [
            {"ratios": "x"}, {"ratios": {"bzImage": "0.1"}}, {"ratios": {"bzImage": True}},
            [], "text", 7, {"cold_boot_ms": {"median": 0}, "wake_ms": {"median": 5}},
            {"cold_boot_ms": {"median": -1}, "fork_ms": {"median": 5}},
            {"incremental": {"first": {"snapshot_ms": 0}, "second": {"snapshot_ms": 3}}},
            {"figures": {"vsock_host_to_guest": None}},
        ]
        for doc in odd:
            t = targets.rows(doc, doc, doc)
            self.assertTrue(all(r["met"] is None for r in t), doc)
            targets.render(t)  # renders without raising

    def test_render_marks_misses_and_units(self):
        text = "\n".join(targets.render(targets.rows(BOOT, SNAPSHOT, DEVICES)))
        self.assertIn("12.000 MiB", text)
        self.assertIn("<= 16 MiB", text)
        self.assertIn("NO", text)
        self.assertIn(">= 1.5", text)


if __name__ == "__main__":
    # cmocka's lines, so that tests/unit/run (make unit) counts these too.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from test_boot_profile import run_cmocka  # noqa: E402
    sys.exit(run_cmocka(sys.modules[__name__]))
