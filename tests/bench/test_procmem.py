#!/usr/bin/env python3
"""Unit tests for bench/lib/procmem.py (bench/density's /proc reading):
smaps_rollup, smaps and stat parsing, which processes make a kilnd
sandbox, a kiln-vmm's guest RAM split out, the percentile and the largest
N that fits, on a fake /proc.

    python3 tests/bench/test_procmem.py      # from the top of the checkout
"""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "lib"))
import procmem  # noqa: E402

ROLLUP = """55d0c0000000-7ffd00000000 ---p 00000000 00:00 0                          [rollup]
Rss:               12000 kB
Pss:                7000 kB
Pss_Anon:           3000 kB
Shared_Clean:       8000 kB
Private_Clean:       600 kB
Private_Dirty:      3400 kB
Referenced:        12000 kB
"""


def stat(pid, comm, ppid):
    return f"{pid} ({comm}) S {ppid} {pid} {pid} 0 -1 4194560 0 0 0 0\n"


class Parse(unittest.TestCase):
    def test_rollup_pss_and_private_sum(self):
        self.assertEqual(procmem.parse_smaps_rollup(ROLLUP), (7000, 4000))

    def test_rollup_empty_or_odd_lines(self):
        self.assertEqual(procmem.parse_smaps_rollup(""), (0, 0))
        self.assertEqual(procmem.parse_smaps_rollup("Pss:\nPrivate_Dirty: x kB\n"), (0, 0))

    def test_stat_comm_with_parentheses_and_spaces(self):
        self.assertEqual(procmem.parse_stat(stat(9, "a) (b c", 4)), (4, "a) (b c"))


MIB = 1 << 20


def vma(start, size, perms="rw-p", name="", pss=0, private=(0, 0), anon=0):
    """One mapping of /proc/PID/smaps (sizes in KiB)."""
    return (f"{start:x}-{start + size:x} {perms} 00000000 00:00 0          {name}\n"
            f"Size:           {size // 1024} kB\nRss:   {pss} kB\nPss:   {pss} kB\n"
            f"Shared_Clean:   0 kB\nPrivate_Clean:  {private[0]} kB\nPrivate_Dirty:  {private[1]} kB\n"
            f"Anonymous:      {anon} kB\nAnonHugePages:  0 kB\nVmFlags: rd wr mr mw me ac\n")


# A restored kiln-vmm with 8 MiB of guest RAM at 0x7f0000000000 (2 MiB
# aligned): the snapshot's file over all of it, then a layer's run and the
# pages the guest wrote split it; a heap and an anonymous mapping right
# after guest RAM (adjacent, read-write) that must not be counted in.
VMM_SMAPS = (
    vma(0x7f0000000000 - 16 * MIB, 4 * MIB, "r-xp", "/usr/libexec/kiln-vmm", pss=300, private=(40, 0)) +
    vma(0x5600000000, 132 * 1024, name="[heap]", pss=100, private=(0, 100), anon=100) +
    vma(0x7f0000000000, 2 * MIB, name="/snap/memory", pss=700, private=(100, 600), anon=600) +
    vma(0x7f0000200000, 1 * MIB, name="/snap/layer1", pss=300, private=(50, 0)) +
    vma(0x7f0000300000, 5 * MIB, name="/snap/memory", pss=1000, private=(0, 400), anon=400) +
    vma(0x7f0000800000, 1 * MIB, pss=60, private=(0, 60), anon=60))


class Smaps(unittest.TestCase):
    def test_parse_fields_per_mapping_in_address_order(self):
        m = procmem.parse_smaps(VMM_SMAPS)
        self.assertEqual([v["start"] for v in m], sorted(v["start"] for v in m))
        self.assertEqual(m[0], {"start": 0x5600000000, "end": 0x5600000000 + 132 * 1024, "perms": "rw-p",
                                "pss": 100, "uss": 100, "anon": 100})
        self.assertEqual(procmem.parse_smaps("junk\nPss: 5 kB\n"), [])

    def test_guest_ram_is_the_run_of_its_size(self):
        m = procmem.parse_smaps(VMM_SMAPS)
        i, j = procmem.guest_region(m, 8 * MIB)
        self.assertEqual((m[i]["start"], m[j]["end"]), (0x7f0000000000, 0x7f0000800000))
        self.assertEqual(procmem.split_guest(m, 8 * MIB),
                         {"pss": 2460, "uss": 1350, "guest_pss": 2000, "guest_uss": 1150, "guest_anon": 1000})

    def test_no_run_of_that_size_or_a_gap_or_read_only(self):
        m = procmem.parse_smaps(VMM_SMAPS)
        self.assertIsNone(procmem.guest_region(m, 64 * MIB))
        self.assertIsNone(procmem.split_guest(m, 64 * MIB))
        gap = procmem.parse_smaps(VMM_SMAPS.replace("7f0000300000-", "7f0000301000-"))
        self.assertIsNone(procmem.guest_region(gap, 8 * MIB))
        ro = procmem.parse_smaps(VMM_SMAPS.replace("7f0000200000-7f0000300000 rw-p", "7f0000200000-7f0000300000 r--p"))
        self.assertIsNone(procmem.guest_region(ro, 8 * MIB))
        self.assertIsNone(procmem.guest_region([], 8 * MIB))

    def test_an_aligned_run_wins_and_two_of_them_are_ambiguous(self):
        # 1 MiB before guest RAM, adjacent: [prev, 2, 1, 5] minus the last 1 MiB is
        # also 8 MiB, at an unaligned start.
        before = vma(0x7f0000000000 - MIB, MIB, pss=1, private=(0, 1))
        m = procmem.parse_smaps(before + VMM_SMAPS)
        self.assertEqual(m[procmem.guest_region(m, 8 * MIB)[0]]["start"], 0x7f0000000000)
        other = vma(0x7e0000000000, 8 * MIB, pss=5, private=(0, 5), anon=5)
        self.assertIsNone(procmem.guest_region(procmem.parse_smaps(other + VMM_SMAPS), 8 * MIB))

    def test_vmm_guest_reads_proc_and_a_gone_process_is_none(self):
        with tempfile.TemporaryDirectory() as proc:
            os.mkdir(os.path.join(proc, "21"))
            with open(os.path.join(proc, "21", "smaps"), "w") as f:
                f.write(VMM_SMAPS)
            self.assertEqual(procmem.vmm_guest(21, 8 * MIB, proc)["guest_anon"], 1000)
            self.assertIsNone(procmem.vmm_guest(22, 8 * MIB, proc))


class Sandbox(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.proc = self.tmp.name
        # kilnd 10; keeper 20 (kilnd --keeper) -> kiln-vmm 21 -> passt 22;
        # another sandbox's keeper 30 -> kiln-vmm 31; an unrelated 40.
        for pid, comm, ppid in ((10, "kilnd", 1), (20, "kilnd", 10), (21, "kiln-vmm", 20),
                                (22, "passt", 21), (30, "kilnd", 10), (31, "kiln-vmm", 30),
                                (40, "bash", 1)):
            d = os.path.join(self.proc, str(pid))
            os.mkdir(d)
            with open(os.path.join(d, "stat"), "w") as f:
                f.write(stat(pid, comm, ppid))
            if pid != 22:
                with open(os.path.join(d, "smaps_rollup"), "w") as f:
                    f.write(ROLLUP.replace("7000", str(pid * 100)))
        os.mkdir(os.path.join(self.proc, "self"))

    def tearDown(self):
        self.tmp.cleanup()

    def test_table_skips_non_pids(self):
        t = procmem.proc_table(self.proc)
        self.assertEqual(sorted(t), [10, 20, 21, 22, 30, 31, 40])
        self.assertEqual(t[21], (20, "kiln-vmm"))

    def test_one_sandbox_is_its_vmm_keeper_and_their_children(self):
        t = procmem.proc_table(self.proc)
        self.assertEqual(procmem.sandbox_pids(21, 10, t), {21: "kiln-vmm", 20: "keeper", 22: "passt"})

    def test_memory_sums_by_kind_and_skips_a_gone_process(self):
        t = procmem.proc_table(self.proc)
        # passt (22) has no smaps_rollup: gone meanwhile, left out.
        self.assertEqual(procmem.sandbox_memory(21, 10, t, self.proc),
                         {"kiln-vmm": [2100, 4000], "keeper": [2000, 4000]})

    def test_a_vmm_started_by_kilnd_itself_has_no_keeper(self):
        t = procmem.proc_table(self.proc)
        t[21] = (10, "kiln-vmm")
        self.assertEqual(procmem.sandbox_pids(21, 10, t), {21: "kiln-vmm", 22: "passt"})

    def test_a_pid_that_is_no_vmm_is_refused(self):
        t = procmem.proc_table(self.proc)
        with self.assertRaisesRegex(RuntimeError, "40 is not a kiln-vmm"):
            procmem.sandbox_pids(40, 10, t)
        with self.assertRaisesRegex(RuntimeError, "99 is not a kiln-vmm"):
            procmem.sandbox_pids(99, 10, t)


class Figures(unittest.TestCase):
    def test_nearest_rank_percentile(self):
        v = list(range(1, 101))
        self.assertEqual(procmem.pct(v, 0.5), 50)
        self.assertEqual(procmem.pct(v, 0.99), 99)
        self.assertEqual(procmem.pct([5, 1, 3], 0.99), 5)
        self.assertEqual(procmem.pct([7], 0.5), 7)

    def test_largest_n_takes_the_dearest_measure(self):
        b = [{"mem_available_drop_kib": 2048, "pss_kib": 4096}, {"mem_available_drop_kib": 8192, "pss_kib": 1000}]
        self.assertEqual(procmem.largest_n(b, 1 << 20), int((1 << 20) * 0.8 / 8192))

    def test_largest_n_floor_per_sandbox(self):
        b = [{"mem_available_drop_kib": -500, "pss_kib": 10}]
        self.assertEqual(procmem.largest_n(b, 10240), 8)


if __name__ == "__main__":
    # cmocka's lines, so that tests/unit/run (make unit) counts these too.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from test_boot_profile import run_cmocka  # noqa: E402
    sys.exit(run_cmocka(sys.modules[__name__]))
