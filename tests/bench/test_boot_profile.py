#!/usr/bin/env python3
"""Unit tests for bench/lib/boot_profile.py, the pure part of bench/boot's
guest boot profile: kernel log and timeline text in, dicts out.

    python3 tests/bench/test_boot_profile.py      # from the top of the checkout
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "lib"))
import boot_profile as bp  # noqa: E402
import exit_detail as ed  # noqa: E402

# What kiln's kernel (no KALLSYMS, printk.time=1) prints on the console with
# initcall_debug, with the serial line's \r\n, plus lines a real log mixes in.
LOG_ADDR = (
    "[    0.000000] Linux version 6.1.0 (kiln) #1 SMP\r\n"
    "[    0.000000] Kernel command line: reboot=k panic=-1 console=ttyS0 kiln.poweroff "
    "initcall_debug loglevel=8 printk.time=1\r\n"
    "[    0.010000] calling  0xffffffff81d0a0e0 @ 1\r\n"
    "[    0.010500] initcall 0xffffffff81d0a0e0 returned 0 after 500 usecs\r\n"
    "[    0.011000] calling  0xffffffff81d0b000 @ 1\r\n"
    "[    0.011010] random: crng init done\r\n"
    "[    0.013000] initcall 0xffffffff81d0b000 returned -19 after 2000 usecs\r\n"
    "[    0.013100] calling  0xffffffff81d0c000 @ 1\r\n"
    "[    0.013200] initcall 0xffffffff81d0c000 returned 0 after 100 usecs\r\n"
    "[    0.020000] Run /init as init process\r\n"
    "kiln-init: hostname kiln\r\n")

# Captured from a profiled PVH boot in the nested harness (bench/boot), with
# the serial line's \r\n: jiffies-granular durations before the clocksource
# switch, other drivers' lines between, printk stamps standing still at the
# switch itself.
LOG_CAPTURED = "\r\n".join([
    "[    2.781293] initcall 0xffffffff81b01dfb returned 0 after 0 usecs",
    "[    2.783979] calling  0xffffffff81b0290d @ 1",
    "[    2.789965] pps_core: LinuxPPS API ver. 1 registered",
    "[    2.792046] pps_core: Software ver. 5.3.6 - Copyright 2005-2007 Rodolfo Giometti "
    "<giometti@linux.it>",
    "[    2.796135] initcall 0xffffffff81b0290d returned 0 after 8000 usecs",
    "[    2.800125] calling  0xffffffff81b029b8 @ 1",
    "[    2.806385] PTP clock support registered",
    "[    2.808075] initcall 0xffffffff81b029b8 returned 0 after 4000 usecs",
    "[    2.812015] calling  0xffffffff81b031b1 @ 1",
    "[    2.816092] initcall 0xffffffff81b031b1 returned 0 after 0 usecs",
    "[    2.819973] calling  0xffffffff81b0370b @ 1",
    "[    2.839675] initcall 0xffffffff81b0370b returned 0 after 12000 usecs",
    "[    2.899943] initcall 0xffffffff81af390a returned -19 after 0 usecs",
    "[    2.911675] calling  0xffffffff81af93bf @ 1",
    "[    2.911675] clocksource: Switched to clocksource kvm-clock",
    "[    2.911675] initcall 0xffffffff81af93bf returned 0 after 9874 usecs",
    "[    2.911675] calling  0xffffffff81afe49e @ 1",
    "[    2.911675] initcall 0xffffffff81afe49e returned 0 after 150 usecs",
    "[   12.325471] Run /init as init process", ""])
CAPTURED_SYMS = {0xffffffff81af93bf: "clocksource_done_booting", 0xffffffff81b0370b: "net_dev_init",
                 0xffffffff81b0290d: "pps_init", 0xffffffff81b029b8: "ptp_init"}


class ParseInitcalls(unittest.TestCase):
    def test_captured_log(self):
        r = bp.parse_initcalls(LOG_CAPTURED, CAPTURED_SYMS)
        self.assertEqual(r["count"], 8)
        self.assertEqual(r["total_us"], 8000 + 4000 + 12000 + 9874 + 150)
        self.assertEqual([c["name"] for c in r["initcalls"] if c["us"] >= 4000],
                         ["pps_init", "ptp_init", "net_dev_init", "clocksource_done_booting"])
        self.assertEqual(r["failed"], 1)
        self.assertEqual((r["unfinished"], r["unparsed"], r["negative"]), ([], 0, 0))
        # returned -> calling right after: 2686, 3990, 3940, 3881, 11732, 0;
        # calling -> its returned right after, less the duration: 4077 - 0,
        # 19702 - 12000, 0 - 150 (stamps standing still at the switch); pairs
        # with a pps_core/PTP/clocksource line between are left out.
        self.assertAlmostEqual(r["debug_output_us"],
                               2686 + 3990 + 3940 + 3881 + 11732 + 0 + 4077 + 7702 - 150, places=0)

    def test_addresses_resolved_summed_and_in_order(self):
        syms = {0xffffffff81d0a0e0: "net_dev_init", 0xffffffff81d0b000: "i8042_init"}
        r = bp.parse_initcalls(LOG_ADDR, syms)
        self.assertEqual(r["count"], 3)
        self.assertEqual(r["total_us"], 2600)
        self.assertEqual([c["name"] for c in r["initcalls"]],
                         ["net_dev_init", "i8042_init", "0xffffffff81d0c000"])
        self.assertEqual(r["initcalls"][1]["ret"], -19)
        self.assertEqual(r["failed"], 1)
        self.assertEqual((r["unfinished"], r["unparsed"], r["negative"]), ([], 0, 0))

    def test_without_symbols_addresses_stay(self):
        r = bp.parse_initcalls(LOG_ADDR)
        self.assertEqual(r["initcalls"][0]["name"], "0xffffffff81d0a0e0")
        self.assertEqual(r["initcalls"][0]["fn"], "0xffffffff81d0a0e0")

    def test_kallsyms_names_lose_their_offset(self):
        text = ("[    0.123456] calling  foo_init+0x0/0x40 @ 1\n"
                "[    0.123456] initcall foo_init+0x0/0x40 returned 0 after 123 usecs\n"
                "initcall bar_init+0x0/0x1c [bar] returned 0 after 7 usecs\n")
        r = bp.parse_initcalls(text)
        self.assertEqual([(c["name"], c["us"]) for c in r["initcalls"]],
                         [("foo_init", 123), ("bar_init", 7)])

    def test_no_timestamps_bare_cr_and_other_units(self):
        text = ("initcall a_init returned 0 after 3 msecs\rinitcall b_init returned 0 after "
                "1500 nsecs\r\r\ninitcall c_init returned 0 after 2 usecs")
        r = bp.parse_initcalls(text)
        self.assertEqual([c["us"] for c in r["initcalls"]], [3000, 1.5, 2])

    def test_junk_interleaved_and_cut_lines(self):
        text = (
            "\x00\x1b[0m garbage \xff\xfe\n"
            # another printk ran into the start of the line: still one initcall
            "[    0.5] virtio_blk virtio0: [vda] 8 512-byte[    0.6] initcall x_init returned 0 after 10 usecs\n"
            # timestamps that go backwards or are nonsense change nothing
            "[99999.000000] initcall y_init returned 0 after 20 usecs\n"
            "[    0.000001] initcall z_init returned 0 after 30 usecs\n"
            # cut short: counted as unparsed, never guessed at
            "[    0.7] initcall w_init returned 0 af\n"
            "[    0.7] initcall w_init retur\x00ned 0 after 40 usecs\n"
            # a called initcall whose return line was lost
            "[    0.8] calling  lost_init+0x0/0x10 @ 1\n"
            # a garbage number of usecs: below zero, left out of the sum
            "initcall neg_init returned 0 after -5 usecs\n"
            # words that are not initcall lines
            "Kernel command line: initcall_debug initcall_blacklist=foo\n"
            "probe of serial8250 returned 0 after 12 usecs\n"
            "calling all cars\n")
        r = bp.parse_initcalls(text)
        self.assertEqual([c["name"] for c in r["initcalls"]], ["x_init", "y_init", "z_init", "w_init"])
        self.assertEqual(r["total_us"], 100)
        self.assertEqual(r["unparsed"], 1)
        self.assertEqual(r["unfinished"], ["lost_init"])
        self.assertEqual(r["negative"], 1)

    def test_debug_output_from_timestamps(self):
        # LOG_ADDR: a 0.5 ms initcall stamped 0.5 ms apart (nothing), returned->calling
        # 0.5 ms, 2 ms apart for 2 ms (nothing; a line between is left out anyway),
        # returned->calling 0.1 ms, then 0.1 ms apart for 0.1 ms.
        self.assertAlmostEqual(bp.parse_initcalls(LOG_ADDR)["debug_output_us"], 600, places=3)
        text = ("[    1.000000] calling  a @ 1\n"
                "[    1.004000] initcall a returned 0 after 1000 usecs\n"   # 3 ms printing
                "[    1.010000] calling  b @ 1\n"                          # 6 ms printing
                "[    1.010000] initcall b returned 0 after 4000 usecs\n"   # jiffies: -4 ms
                "[    0.500000] calling  c @ 1\n"                          # backwards: left out
                "[    0.600000] initcall c returned 0 after 0 usecs\n")    # 100 ms printing
        self.assertAlmostEqual(bp.parse_initcalls(text)["debug_output_us"], 105000, places=3)
        self.assertIsNone(bp.parse_initcalls("initcall a returned 0 after 1 usecs\n")["debug_output_us"])

    def test_empty_and_unrelated_text(self):
        for text in ("", "\r\n\r\n", "no kernel here\n" * 10):
            r = bp.parse_initcalls(text)
            self.assertEqual((r["count"], r["total_us"], r["initcalls"]), (0, 0, []))


TIMELINE = ('kiln-vmm: some warning\n'
            '{"unit":"ms","milestones":[{"name":"vm_ready","ms":8.000},'
            '{"name":"first_kvm_run","ms":10.000},{"name":"kernel_start","ms":25.000,"derived":true},'
            '{"name":"init_started","ms":100.000},{"name":"shutdown_requested","ms":110.000},'
            '{"name":"vm_exit","ms":130.000}],"exit":{"reason":"reset","status":0}}\n')


class Timeline(unittest.TestCase):
    def test_parse(self):
        ms = bp.parse_timeline(TIMELINE)
        self.assertEqual(ms["first_kvm_run"], 10.0)
        self.assertEqual(ms["kernel_start"], 25.0)
        self.assertEqual(len(ms), 6)

    def test_none_or_broken(self):
        self.assertEqual(bp.parse_timeline(""), {})
        self.assertEqual(bp.parse_timeline('{"unit":"ms","milestones":[{"name":"x"\n'), {})
        self.assertEqual(bp.parse_timeline('{"other": 1}\n'), {})

    def test_phases_add_up_to_wall(self):
        ms = bp.parse_timeline(TIMELINE)
        p = bp.phases(ms, 140.0, 60.0, 5.0)
        self.assertEqual(p, {"vmm_setup": 10.0, "vmm_args": None, "vmm_kvm": None,
                             "vmm_devices": None, "vmm_load": None, "vmm_vcpus": None,
                             "kernel_early": 15.0, "kernel_init": 75.0,
                             "initcalls": 60.0, "debug_output": 5.0, "kernel_init_rest": 10.0,
                             "init_agent": 10.0, "shutdown": 20.0, "outside": 10.0, "total": 140.0})
        self.assertAlmostEqual(sum(p[k] for k in bp.SUM_OF), p["total"])
        # the cost of initcall_debug's lines unknown (no timestamps): not split off
        q = bp.phases(ms, 140.0, 60.0)
        self.assertIsNone(q["debug_output"])
        self.assertEqual(q["kernel_init_rest"], 15.0)
        self.assertAlmostEqual(sum(q[k] or 0 for k in bp.SUM_OF), q["total"])

    def test_vmm_setup_split(self):
        ms = dict(bp.parse_timeline(TIMELINE), boot_start=1.0, boot_kvm_open=3.0,
                  boot_devices_made=4.5, boot_guest_loaded=8.0)
        p = bp.phases(ms, 140.0)
        self.assertEqual((p["vmm_args"], p["vmm_kvm"], p["vmm_devices"], p["vmm_load"],
                          p["vmm_vcpus"]), (1.0, 2.0, 1.5, 3.5, 2.0))
        self.assertAlmostEqual(sum(p[k] for k in ("vmm_args", "vmm_kvm", "vmm_devices",
                                                 "vmm_load", "vmm_vcpus")), p["vmm_setup"])

    def test_agent_ready_ends_init(self):
        ms = dict(bp.parse_timeline(TIMELINE), agent_ready=104.0)
        p = bp.phases(ms, 140.0, 60.0)
        self.assertEqual((p["init_agent"], p["shutdown"]), (4.0, 26.0))

    def test_missing_milestones_are_none(self):
        ms = bp.parse_timeline(TIMELINE)
        del ms["kernel_start"]
        p = bp.phases(ms, 140.0, 60.0)
        self.assertIsNone(p["kernel_early"])
        self.assertIsNone(p["kernel_init"])
        self.assertIsNone(p["kernel_init_rest"])
        self.assertEqual(p["vmm_setup"], 10.0)
        q = bp.phases(bp.parse_timeline(TIMELINE), 140.0)
        self.assertEqual(q["kernel_init"], 75.0)
        self.assertIsNone(q["kernel_init_rest"])


class Combine(unittest.TestCase):
    def run_of(self, durations, wall):
        text = "".join(f"initcall {fn} returned 0 after {us} usecs\n" for fn, us in durations)
        calls = bp.parse_initcalls(text)
        return {"phases": bp.phases(bp.parse_timeline(TIMELINE), wall, calls["total_us"] / 1000),
                "initcalls": calls}

    def test_medians_and_top(self):
        runs = [self.run_of([("a", 1000), ("b", 5000), ("c", 100)], 140.0),
                self.run_of([("a", 3000), ("b", 1000), ("c", 200)], 150.0),
                self.run_of([("a", 2000), ("b", 4000)], 160.0)]
        c = bp.combine(runs, top=2)
        self.assertEqual(c["runs"], 3)
        self.assertEqual(c["phases_ms"]["total"], {"median": 150.0, "min": 140.0, "max": 160.0, "n": 3})
        self.assertEqual(c["initcall_ms"]["median"], 6.0)  # of 6.1, 4.2, 6.0
        self.assertEqual([(e["name"], e["ms"], e["n"]) for e in c["top_initcalls"]],
                         [("b", 4.0, 3), ("a", 2.0, 3)])
        text = bp.format_tables({"vmlinux (PVH)": c}, {"vmlinux (PVH)": bp.timed_phases(
            [dict(bp.parse_timeline(TIMELINE), wall=135.0)])})
        self.assertIn("total: wall", text)
        self.assertIn("top initcalls, vmlinux (PVH): 3 initcalls", text)
        self.assertNotIn("note:", text)

    def test_clock_lag_note(self):
        c = bp.combine([self.run_of([("a", 1000)], 140.0)])
        timed = [dict(bp.parse_timeline(TIMELINE), wall=135.0)]
        timed[0]["kernel_start"] = 11.0  # early boot 1 ms in the timed boots, 15 ms profiled
        t = bp.timed_phases(timed)
        self.assertEqual(bp.clock_lag_ms(c, t), 14.0)
        self.assertIsNone(bp.clock_lag_ms(c, None))
        self.assertNotIn("note:", bp.format_tables({"k": c}, {"k": t}))  # under 100 ms
        c["phases_ms"]["kernel_early"]["median"] = 2000.0
        self.assertIn("note: early boot took 1999 ms longer than in the timed boots", bp.format_tables({"k": c}, {"k": t}))


# kvm tracepoint lines as the outer kernel prints them (bench/lib/exit_detail.py),
# both page-fault formats, and lines that are not ours.
TRACE = "\n".join([
    "# tracer: nop",
    "  vcpu0-345 [000] d.... 38.1: kvm_msr: msr_write 6e0 = 0x1b2e3c4d5e",
    "  vcpu0-345 [000] d.... 38.2: kvm_msr: msr_write 6e0 = 0x1b2e3c4d6e",
    "  vcpu0-345 [000] d.... 38.3: kvm_msr: msr_read c0011028 = 0x0 (#GP)",
    "  vcpu0-345 [000] d.... 38.4: kvm_pio: pio_write at 0x21 size 1 count 1 val 0xff ",
    "  vcpu0-345 [000] d.... 38.5: kvm_cpuid: func 40000000 idx 0 rax 40000001 rbx 4b4d564b "
    "rcx 564b4d56 rdx 4d, cpuid entry found",
    "  vcpu0-345 [000] d.... 38.6: kvm_cpuid: func 40000100 idx 0 rax 0 rbx 0 rcx 0 rdx 0, cpuid entry not found",
    "  vcpu0-345 [000] d.... 38.7: kvm_cpuid: func 4000ff00 idx 0 rax 0 rbx 0 rcx 0 rdx 0, cpuid entry not found",
    "  vcpu0-345 [000] d.... 38.8: kvm_page_fault: vcpu 0 rip 0xffffffff81000000 address 0x00000000fec00000 "
    "error_code 0x6",
    "  vcpu0-345 [000] d.... 38.9: kvm_page_fault: address fee00300 error_code 6",
    "  vcpu0-345 [000] d.... 39.0: kvm_page_fault: vcpu 0 rip 0x0 address 0x00000000d0000070 error_code 0x4",
    "  vcpu0-345 [000] d.... 39.1: kvm_page_fault: vcpu 0 rip 0x0 address 0x0000000001000000 error_code 0x14",
    "  vcpu0-345 [000] d.... 39.2: kvm_exit: vcpu 0 reason npf rip 0x0 info1 0x0",
    "kvm_msr: msr_write zz = nothing",
    "garbage \x00\xff",
])


class ExitDetail(unittest.TestCase):
    def test_parse_counts_each_kind(self):
        d = ed.parse(TRACE)
        self.assertEqual(d["msr"], {"write 0x6e0": 2, "read 0xc0011028 #GP": 1})
        self.assertEqual(d["pio"], {"write 0x21": 1})
        self.assertEqual(d["cpuid"], {"0x40000000": 1, "0x40000100-0x4000ff00 (hypervisor scan)": 2})
        self.assertEqual(d["npf"], {"ioapic": 1, "lapic": 1, "other mmio (virtio)": 1, "ram": 1})

    def test_empty_and_hostile_text(self):
        self.assertEqual(ed.parse(""), {"msr": {}, "pio": {}, "cpuid": {}, "npf": {}})
        self.assertEqual(ed.parse("kvm_msr: msr_write\nkvm_pio: pio_read at zz\n" + "x" * 10000)["msr"], {})

    def test_format_rows_totals_and_top(self):
        lines = ed.format_rows(ed.parse(TRACE), top=1)
        self.assertEqual(len(lines), 4)
        self.assertIn("npf", lines[0])
        self.assertIn("4:", lines[0])
        self.assertIn("3 more", lines[0])
        self.assertIn("write 0x6e0 2", lines[1])


class CmockaStyle(unittest.TextTestResult):
    """Prints cmocka's lines, so tests/unit/run counts these with the unit tests."""

    def startTest(self, test):
        super().startTest(test)
        print(f"[ RUN      ] {test.id()}", flush=True)

    def addSuccess(self, test):
        super().addSuccess(test)
        print(f"[       OK ] {test.id()}", flush=True)


def run_cmocka(module):
    """Runs a module's tests printing cmocka's lines; the exit status."""
    suite = unittest.defaultTestLoader.loadTestsFromModule(module)
    res = unittest.TextTestRunner(resultclass=CmockaStyle, verbosity=0, stream=sys.stderr).run(suite)
    bad = len(res.failures) + len(res.errors)
    print(f"[==========] {res.testsRun} test(s) run.")
    print(f"[  PASSED  ] {res.testsRun - bad} test(s).")
    if bad:
        print(f"[  FAILED  ] {bad} test(s), listed below:")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(run_cmocka(sys.modules[__name__]))
