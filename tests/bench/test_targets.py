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
# bench/density's shape (a full run with the guest RAM split out).
DENSITY = {
    "harness": "nested", "image": "debian",
    "kilnd": [
        {"n": 1, "all_ready_ms": 800.0, "ready_ms": [800.0], "pss_kib": 9000, "uss_kib": 8900,
         "pss_less_dirtied_kib": 2000,
         "by_process": {"kiln-vmm": {"pss_kib": 8800, "uss_kib": 8800, "uss_beyond_guest_kib": 300},
                        "keeper": {"pss_kib": 200, "uss_kib": 140}}},
        {"n": 32, "all_ready_ms": 3000.0, "ready_ms": [900.0] * 32, "pss_kib": 3072, "uss_kib": 2500,
         "pss_less_dirtied_kib": 900,
         "by_process": {"kiln-vmm": {"pss_kib": 2900, "uss_kib": 2400, "uss_beyond_guest_kib": 200},
                        "keeper": {"pss_kib": 172, "uss_kib": 100}}}],
    "libkiln": [
        {"n": 1, "all_ready_ms": 50.0, "ready_ms": [50.0], "pss_kib": 2048, "uss_kib": 2000},
        {"n": 32, "all_ready_ms": 400.0, "ready_ms": [30.0, 60.0, 400.0], "pss_kib": 1000, "uss_kib": 900}]}
# From the bench before it split guest RAM out, and with no libkiln half.
DENSITY_OLD = {
    "kilnd": [
        {"n": 1, "all_ready_ms": 800.0, "ready_ms": [800.0], "pss_kib": 9000, "uss_kib": 8900,
         "by_process": {"kiln-vmm": {"pss_kib": 8800, "uss_kib": 8800}}},
        {"n": 8, "all_ready_ms": 10900.0, "ready_ms": [5000.0] * 8, "pss_kib": 10137.6, "uss_kib": 7800,
         "by_process": {"kiln-vmm": {"pss_kib": 9900, "uss_kib": 7700}}}],
    "libkiln_error": "kiln-density exited 1"}
DENSITY_ROWS = ("fork through libkiln in one process / cold boot",
                "32 concurrent forks all ready / one fork (kilnd)",
                "32 concurrent forks all ready / one fork (libkiln)",
                "PSS per idle forked sandbox, beyond the guest pages it dirtied",
                "private memory (USS) per kiln-vmm beyond guest RAM")


def by_figure(table):
    return {r["figure"]: r for r in table}


class TargetRows(unittest.TestCase):
    def test_every_row_of_the_issue_is_there_and_judged(self):
        t = by_figure(targets.rows(BOOT, SNAPSHOT, DEVICES, DENSITY))
        self.assertEqual(len(t), 15)
        self.assertTrue(t["boot wall, kiln / QEMU microvm (bzImage)"]["met"])
        self.assertFalse(t["boot wall, kiln / QEMU microvm (vmlinux (PVH))"]["met"])
        self.assertFalse(t["VM exits per boot, kiln / QEMU microvm (bzImage)"]["met"])
        self.assertTrue(t["VM exits per boot, kiln / QEMU microvm (vmlinux (PVH))"]["met"])
        self.assertAlmostEqual(t["wake to ready agent / cold boot"]["value"], 0.04)
        self.assertTrue(t["wake to ready agent / cold boot"]["met"])
        self.assertAlmostEqual(t["fork through kilnd to a ready agent / cold boot"]["value"], 0.05)
        self.assertTrue(t["fork through kilnd to a ready agent / cold boot"]["met"])  # <= 0.05
        self.assertTrue(t["create through the warm pool / cold create"]["met"])
        self.assertAlmostEqual(t["second checkpoint after 10 MiB in 1 GiB: stored"]["value"], 12.0)
        self.assertTrue(t["second checkpoint: pause / the first's"]["met"])
        self.assertTrue(t["vsock host->guest, kiln / QEMU"]["met"])  # >= 1.5

    def test_exits_target_is_half_of_qemus(self):
        boot = {"ratios": {"bzImage exits.total": 0.5, "vmlinux (PVH) exits.total": 0.51}}
        t = by_figure(targets.rows(boot, None, None, None))
        self.assertTrue(t["VM exits per boot, kiln / QEMU microvm (bzImage)"]["met"])
        self.assertFalse(t["VM exits per boot, kiln / QEMU microvm (vmlinux (PVH))"]["met"])

    def test_a_bench_not_run_is_no_data_not_a_miss(self):
        t = targets.rows(None, SNAPSHOT, None)
        missing = [r for r in t if r["met"] is None]
        self.assertEqual({r["bench"] for r in missing}, {"boot", "devices", "density"})
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
            t = targets.rows(doc, doc, doc, doc)
            self.assertTrue(all(r["met"] is None for r in t), doc)
            targets.render(t)  # renders without raising

    def test_render_marks_misses_and_units(self):
        text = "\n".join(targets.render(targets.rows(BOOT, SNAPSHOT, DEVICES)))
        self.assertIn("12.000 MiB", text)
        self.assertIn("<= 16 MiB", text)
        self.assertIn("NO", text)
        self.assertIn(">= 1.5", text)


class DensityRows(unittest.TestCase):
    def test_a_full_density_run(self):
        t = by_figure(targets.rows(None, SNAPSHOT, None, DENSITY))
        lib = t["fork through libkiln in one process / cold boot"]
        self.assertAlmostEqual(lib["value"], 50.0 / 2000.0)
        self.assertFalse(lib["met"])  # 0.025 > 0.02
        self.assertIn("bench/snapshot's cold boot 2000 ms", lib["note"])
        self.assertIn("debian", lib["note"])
        kd = t["32 concurrent forks all ready / one fork (kilnd)"]
        self.assertAlmostEqual(kd["value"], 3000.0 / 800.0)
        self.assertTrue(kd["met"])
        self.assertIn("3000 / 800 ms", kd["note"])
        lk = t["32 concurrent forks all ready / one fork (libkiln)"]
        self.assertAlmostEqual(lk["value"], 8.0)
        self.assertFalse(lk["met"])
        pss = t["PSS per idle forked sandbox, beyond the guest pages it dirtied"]
        self.assertAlmostEqual(pss["value"], 900 / 1024)  # the largest batch's
        self.assertTrue(pss["met"])
        self.assertIn("N=32", pss["note"])
        self.assertNotIn("not separated", pss["note"])
        vmm = t["private memory (USS) per kiln-vmm beyond guest RAM"]
        self.assertEqual(vmm["value"], 200)
        self.assertTrue(vmm["met"])
        self.assertIn("200.000 KiB", "\n".join(targets.render(list(t.values()))))

    def test_concurrency_is_not_judged_below_eight_cpus(self):
        one_cpu = dict(DENSITY, host={"cpus": 1})
        t = by_figure(targets.rows(None, SNAPSHOT, None, one_cpu))
        for path in ("kilnd", "libkiln"):
            r = t[f"32 concurrent forks all ready / one fork ({path})"]
            self.assertIsNone(r["met"])
            self.assertIsNotNone(r["value"])  # the figure is still shown
            self.assertIn("not judged: 1 CPU (", r["unjudged"])
        text = "\n".join(targets.render(list(t.values())))
        self.assertIn("not judged: 1 CPU", text)
        self.assertNotIn("no data: make bench-density", text)
        # 8 CPUs can do it: judged again
        t = by_figure(targets.rows(None, SNAPSHOT, None, dict(DENSITY, host={"cpus": 8})))
        self.assertTrue(t["32 concurrent forks all ready / one fork (kilnd)"]["met"])

    def test_libkiln_fork_needs_a_cold_boot_from_bench_snapshot(self):
        t = by_figure(targets.rows(None, None, None, DENSITY))
        lib = t["fork through libkiln in one process / cold boot"]
        self.assertIsNone(lib["met"])
        self.assertEqual(lib["bench"], "snapshot")
        self.assertTrue(t["32 concurrent forks all ready / one fork (kilnd)"]["met"])

    def test_no_density_json_is_no_data(self):
        t = by_figure(targets.rows(BOOT, SNAPSHOT, DEVICES, None))
        for fig in DENSITY_ROWS:
            self.assertIsNone(t[fig]["met"], fig)
            self.assertEqual(t[fig]["bench"], "density", fig)
        text = "\n".join(targets.render(list(t.values())))
        self.assertEqual(text.count("no data: make bench-density"), len(DENSITY_ROWS))
        self.assertNotIn("not separated", text)  # no figure, nothing to qualify
        self.assertIsNone(by_figure(targets.rows(BOOT, SNAPSHOT, DEVICES))[DENSITY_ROWS[0]]["met"])

    def test_an_older_density_json(self):
        t = by_figure(targets.rows(None, SNAPSHOT, None, DENSITY_OLD))
        self.assertIsNone(t["fork through libkiln in one process / cold boot"]["met"])
        self.assertIsNone(t["32 concurrent forks all ready / one fork (kilnd)"]["met"])  # no N=32
        self.assertIsNone(t["32 concurrent forks all ready / one fork (libkiln)"]["met"])
        pss = t["PSS per idle forked sandbox, beyond the guest pages it dirtied"]
        self.assertAlmostEqual(pss["value"], 9.9)  # N=8's PSS, the whole of it
        self.assertFalse(pss["met"])
        self.assertIn("plus dirtied pages not separated", pss["note"])
        vmm = t["private memory (USS) per kiln-vmm beyond guest RAM"]
        self.assertEqual(vmm["value"], 7700)
        self.assertIn("guest RAM not separated", vmm["note"])
        targets.render(list(t.values()))

    def test_hostile_density_json(self):
        odd = [[], "x", 3, {"kilnd": "x", "libkiln": None}, {"kilnd": [None, 7, {"n": "1"}]},
               {"kilnd": [{"n": 1, "all_ready_ms": 0}, {"n": 32, "all_ready_ms": 5}]},
               {"kilnd": [{"n": True, "pss_kib": 5}], "libkiln": [{"n": 1, "ready_ms": ["1"]}]},
               {"kilnd": [{"n": 1.5, "pss_kib": 5}], "libkiln": [{"n": 1, "ready_ms": []}]},
               {"kilnd": [{"n": 32, "pss_kib": float("nan"), "by_process": {"kiln-vmm": 3}}]},
               {"image": 5, "libkiln": [{"n": 1, "ready_ms": [float("inf")]}]}]
        for doc in odd:
            t = by_figure(targets.rows(None, SNAPSHOT, None, doc))
            for fig in DENSITY_ROWS:
                self.assertIsNone(t[fig]["met"], (doc, fig))
            targets.render(list(t.values()))  # renders without raising


if __name__ == "__main__":
    # cmocka's lines, so that tests/unit/run (make unit) counts these too.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from test_boot_profile import run_cmocka  # noqa: E402
    sys.exit(run_cmocka(sys.modules[__name__]))
