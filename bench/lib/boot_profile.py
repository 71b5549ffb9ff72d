"""The guest's own boot profile for bench/boot: where a kiln-vmm boot's
milliseconds go.

A profiled boot is a kiln-vmm boot with the serial console on and
`initcall_debug loglevel=8 printk.time=1` on the kernel command line
(`loglevel=8`: the initcall lines are KERN_DEBUG, level 7, and the
console prints only levels below its loglevel). Its two sources:

  * kiln-vmm's --boot-timeline=json line on stderr (vmm/kiln-vmm/main.c
    print_timeline: {"unit":"ms","milestones":[{"name":..,"ms":..,
    "derived":true?},..],"exit":{..}}), ms since kiln-vmm started;
  * the kernel log on the console, with one
    `initcall <fn> returned <ret> after <n> usecs` line per initcall
    (init/main.c, trace_initcall_finish_cb). kiln's kernel has no
    KALLSYMS, so <fn> is a raw address (`0xffffffff81d3a1b2`), which
    `symbols()` maps back to a name with the vmlinux symbol table; a
    kernel with KALLSYMS prints `foo_init+0x0/0x40`, taken as `foo_init`.

Every millisecond of the boot (wall time: fork of kiln-vmm to its exit,
measured by the bench) lands in one phase of `phases()`: VMM setup,
kernel early boot (decompression for a bzImage), initcalls, the printing
of initcall_debug's own lines (from the printk stamps), the rest of
kernel init, init/agent, shutdown, and what lies outside kiln-vmm's own
timeline (exec before its clock starts, exit after vm_exit).

Kernel init and its split are guest-clock time: kernel_start is
init_started less the guest's uptime, and the initcall durations and
printk stamps are the guest's too. Early boot (host span less guest
uptime) takes up whatever the guest clock lost; `clock_lag_ms` estimates
that from the timed boots. Initcall durations before the clocksource
switch (fs_initcall) are whole jiffies (10 ms: kiln's kernel runs at
HZ=100), and an initcall's duration includes printing its own messages,
which the console shows at loglevel=8.

The parsing is pure (text in, dict out) and unit-tested by
tests/bench/test_boot_profile.py with captured and hostile log text.
"""
import json
import re
import statistics
import subprocess
import textwrap

# What the kernel command line of a profiled boot adds to kiln's defaults.
CMDLINE = "initcall_debug loglevel=8 printk.time=1"

# trace_initcall_finish_cb (init/main.c, Linux 6.1):
#   "initcall %pS returned %d after %lld usecs"
# searched anywhere in a line: a timestamp, a caller id or the tail of an
# interrupted line may come first.
_RETURNED = re.compile(
    r"\binitcall\s+(?P<fn>\S+?)(?:\s+\[(?P<mod>[^\]\s]+)\])?\s+returned\s+(?P<ret>-?\d+)"
    r"\s+after\s+(?P<dur>-?\d+)\s+(?P<unit>usecs|msecs|nsecs)\b")
# trace_initcall_start_cb: "calling  %pS @ %i"
_CALLING = re.compile(r"\bcalling\s+(?P<fn>\S+?)(?:\s+\[[^\]\s]+\])?\s+@\s+\d+")
# A line that says it is about an initcall but is not one of the above
# (cut short, or run into by other output): counted, never guessed at.
_INITCALL_WORD = re.compile(r"\binitcall\s")
# %pS with KALLSYMS: "name+0xoff/0xsize"; without: "0x" + 16 hex digits.
_SYM_OFFSET = re.compile(r"\+0x[0-9a-fA-F]+/0x[0-9a-fA-F]+$")
_ADDR = re.compile(r"^0x[0-9a-fA-F]{1,16}$")
# printk.time=1: "[    1.234567] " (the guest's sched_clock, seconds).
_STAMP = re.compile(r"^\s*\[\s*(?P<s>\d+\.\d+)\]")
# Control characters other than tab: a guest can send anything down the
# serial line, and \r ends a line as much as \n does.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_UNIT_US = {"usecs": 1.0, "msecs": 1000.0, "nsecs": 0.001}

TOP = 10

# (key, label) in the order a boot goes; `kernel_init` is the sum of the
# two indented rows below it.
PHASES = (
    ("vmm_setup", "VMM setup: start -> first KVM_RUN"),
    ("vmm_args", "  main() to vm_create (options, files)"),
    ("vmm_kvm", "  kernel files mapped, /dev/kvm, KVM VM"),
    ("vmm_devices", "  RAM slots, devices, eventfds"),
    ("vmm_load", "  kernel and initrd copied into RAM"),
    ("vmm_vcpus", "  vCPUs, then threads to KVM_RUN"),
    ("kernel_early", "kernel early boot/decompression: -> kernel_start"),
    ("kernel_init", "kernel init: kernel_start -> init_started"),
    ("initcalls", "  initcalls (sum of their durations)"),
    ("debug_output", "  initcall_debug's own lines (guest clock, est.)"),
    ("kernel_init_rest", "  rest of kernel init"),
    ("init_agent", "init/agent: init_started -> agent_ready|shutdown"),
    ("shutdown", "shutdown: -> vm_exit"),
    ("outside", "outside the timeline: exec, exit (wall - vm_exit)"),
    ("total", "total: wall"),
)
# The phases that add up to the total (kernel_init is split in two).
SUM_OF = ("vmm_setup", "kernel_early", "initcalls", "debug_output", "kernel_init_rest", "init_agent",
          "shutdown", "outside")


def _fn_name(fn, syms):
    name = _SYM_OFFSET.sub("", fn)
    if syms and _ADDR.match(name):
        return syms.get(int(name, 16), name)
    return name


def parse_initcalls(text, syms=None):
    """The initcalls in a kernel log (console text, any line endings).

    `syms` maps addresses to names (symbols()); without it an address
    stays an address. Returns {"count", "total_us", "initcalls": [{"fn",
    "name", "us", "ret"}, ...] in log order, "failed": initcalls that
    returned non-zero, "unfinished": fns called but never seen returning,
    "unparsed": lines that mention an initcall but fit neither form,
    "negative": durations below zero (left out of total_us),
    "debug_output_us": what printing initcall_debug's own lines cost
    (_debug_output_us), None without timestamps}.
    """
    calls = []
    pending = {}
    unparsed = 0
    negative = 0
    seq = []  # (kind, printk seconds or None, duration us) of each line
    for raw in re.split(r"[\r\n]+", text):
        line = _CONTROL.sub("", raw)
        if not line.strip():
            continue
        stamp = _STAMP.match(line)
        t = float(stamp.group("s")) if stamp else None
        m = _RETURNED.search(line)
        if m:
            us = int(m.group("dur")) * _UNIT_US[m.group("unit")]
            fn = m.group("fn")
            if pending.get(fn):
                pending[fn] -= 1
            if us < 0:
                negative += 1
                seq.append(("other", t, 0))
                continue
            calls.append({"fn": _SYM_OFFSET.sub("", fn), "name": _fn_name(fn, syms), "us": us,
                          "ret": int(m.group("ret"))})
            seq.append(("returned", t, us))
            continue
        m = _CALLING.search(line)
        if m:
            pending[m.group("fn")] = pending.get(m.group("fn"), 0) + 1
            seq.append(("calling", t, 0))
            continue
        if _INITCALL_WORD.search(line):
            unparsed += 1
        seq.append(("other", t, 0))
    return {
        "count": len(calls),
        "total_us": sum(c["us"] for c in calls),
        "initcalls": calls,
        "failed": sum(1 for c in calls if c["ret"] != 0),
        "unfinished": sorted(_fn_name(fn, syms) for fn, n in pending.items() for _ in range(n)),
        "unparsed": unparsed,
        "negative": negative,
        "debug_output_us": _debug_output_us(seq),
    }


def _debug_output_us(seq):
    """The guest time spent printing initcall_debug's own lines, from the
    printk timestamps: a `calling` line is stamped just before it goes out
    on the console and the initcall's clock starts after that, a
    `returned` line is stamped after the clock stops and before it goes
    out (init/main.c). So between a `calling` line and the next line,
    its own `returned`, lie the calling line's printing and the initcall
    (its measured duration, subtracted); between a `returned` line and a
    `calling` line right after it, the returned line's printing. Pairs
    with other lines between them, or a stamp going backwards, are left
    out. An estimate: before the clocksource switch (fs_initcall) initcall
    durations are whole jiffies, which this sum averages out, not removes."""
    total = None
    for (k1, t1, _), (k2, t2, us) in zip(seq, seq[1:]):
        if t1 is None or t2 is None or t2 < t1:
            continue
        if k1 == "calling" and k2 == "returned":
            gap = (t2 - t1) * 1e6 - us
        elif k1 == "returned" and k2 == "calling":
            gap = (t2 - t1) * 1e6
        else:
            continue
        total = (total or 0.0) + gap
    return None if total is None else max(total, 0.0)


def parse_timeline(stderr):
    """kiln-vmm's --boot-timeline=json milestones from its stderr:
    {name: ms}, the last JSON line that has them; {} when there is none."""
    for line in reversed(stderr.splitlines()):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict) and isinstance(doc.get("milestones"), list):
            return {m["name"]: float(m["ms"]) for m in doc["milestones"]
                    if isinstance(m, dict) and "name" in m and "ms" in m}
    return {}


def phases(ms, wall_ms, initcall_ms=None, debug_ms=None):
    """Attribution of one boot: {phase key: ms or None}.

    `ms` are the timeline milestones, `wall_ms` the bench's fork-to-exit
    time, `initcall_ms` the initcall sum (None for a boot without
    initcall_debug: kernel_init is then not split), `debug_ms` the cost of
    printing initcall_debug's lines (None: unknown, not split off). A phase whose
    milestones are missing is None. kernel_start is derived from the
    guest's uptime, so kernel_init and its split are guest-clock time and
    kernel_early takes up whatever the guest clock lost (clock_lag_ms); a
    phase can come out negative when guest and host clocks disagree, and
    is reported as it is.
    """
    def span(a, b):
        return ms[b] - ms[a] if a in ms and b in ms else None

    ready = "agent_ready" if "agent_ready" in ms else "shutdown_requested"
    out = {
        "vmm_setup": ms.get("first_kvm_run"),
        # kiln-vmm's own split of its setup (a cold boot's marks in vm_create)
        "vmm_args": ms.get("boot_start"),
        "vmm_kvm": span("boot_start", "boot_kvm_open"),
        "vmm_devices": span("boot_kvm_open", "boot_devices_made"),
        "vmm_load": span("boot_devices_made", "boot_guest_loaded"),
        "vmm_vcpus": span("boot_guest_loaded", "first_kvm_run"),
        "kernel_early": span("first_kvm_run", "kernel_start"),
        "kernel_init": span("kernel_start", "init_started"),
        "initcalls": initcall_ms,
        "debug_output": debug_ms if initcall_ms is not None else None,
        "kernel_init_rest": None,
        "init_agent": span("init_started", ready),
        "shutdown": span(ready, "vm_exit"),
        "outside": wall_ms - ms["vm_exit"] if "vm_exit" in ms and wall_ms is not None else None,
        "total": wall_ms,
    }
    if out["kernel_init"] is not None and initcall_ms is not None:
        out["kernel_init_rest"] = out["kernel_init"] - initcall_ms - (out["debug_output"] or 0)
    return out


def _stats(values):
    v = [x for x in values if x is not None]
    if not v:
        return None
    return {"median": statistics.median(v), "min": min(v), "max": max(v), "n": len(v)}


def combine(runs, top=TOP):
    """The median profile of several profiled boots of one kernel.

    `runs`: [{"phases": phases(...), "initcalls": parse_initcalls(...)}].
    An initcall's duration is its median over the runs it appears in;
    `top` lists the longest by that median.
    """
    out = {"runs": len(runs),
           "phases_ms": {k: _stats([r["phases"].get(k) for r in runs]) for k, _ in PHASES},
           "initcall_count": _stats([r["initcalls"]["count"] for r in runs]),
           "initcall_ms": _stats([r["initcalls"]["total_us"] / 1000 for r in runs])}
    per_fn = {}
    for r in runs:
        seen = {}
        for c in r["initcalls"]["initcalls"]:
            e = seen.setdefault(c["fn"], {"name": c["name"], "us": 0.0, "ret": c["ret"]})
            e["us"] += c["us"]
        for fn, e in seen.items():
            per_fn.setdefault(fn, {"name": e["name"], "us": [], "ret": e["ret"]})["us"].append(e["us"])
    ranked = sorted(({"fn": fn, "name": e["name"], "ms": statistics.median(e["us"]) / 1000,
                      "ret": e["ret"], "n": len(e["us"])} for fn, e in per_fn.items()),
                    key=lambda e: (-e["ms"], e["name"]))
    out["top_initcalls"] = ranked[:top]
    out["anomalies"] = {k: sum(r["initcalls"][k] if isinstance(r["initcalls"][k], int)
                               else len(r["initcalls"][k]) for r in runs)
                        for k in ("unfinished", "unparsed", "negative")}
    return out


def timed_phases(samples):
    """The phases of the timed (quiet, no initcall_debug) boots, from
    their milestones and "wall": {phase key: stats}, kernel init unsplit."""
    per = [phases(s, s.get("wall")) for s in samples]
    return {k: _stats([p[k] for p in per]) for k, _ in PHASES}


def symbols(vmlinux):
    """{address: name} of the text symbols of an ELF vmlinux (binutils'
    nm), {} when there is none to read. kiln's kernel is not relocatable
    (CONFIG_RELOCATABLE off: no KASLR), so the bzImage of the same build
    runs at the vmlinux's addresses too."""
    try:
        p = subprocess.run(["nm", "--defined-only", vmlinux], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    out = {}
    for line in p.stdout.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in "tT":
            try:
                out.setdefault(int(f[0], 16), f[2])
            except ValueError:
                pass
    return out


def clock_lag_ms(profile, timed_phases):
    """How much longer early boot looked in the profiled boots than in the
    timed ones (medians), or None. Nothing is printed on the console
    before kernel_start, so the two should match; kernel_start is derived
    from the guest's uptime, and when the guest clock falls behind the
    host's during the profiled boot (seen in the nested harness: its
    console makes tens of thousands of exits to kiln-vmm), kernel_start
    lands late by about this much: kernel init and its initcall figures
    are guest-clock time, and early boot absorbs what the guest lost."""
    p = (profile.get("phases_ms") or {}).get("kernel_early")
    t = (timed_phases or {}).get("kernel_early")
    if not p or not t:
        return None
    return p["median"] - t["median"]


def _cell(s, total=None, width=9):
    if not s:
        return f"{'-':>{width}}" + ("" if total is None else "       ")
    v = s["median"]
    if total is None:
        return f"{v:{width}.1f}"
    pct = f"{100 * v / total:5.1f}%" if total else "     -"
    return f"{v:{width}.1f} {pct}"


def format_tables(profiles, timed=None):
    """The profile as text: the attribution table (median ms and share of
    wall, profiled boots beside the timed quiet boots where the timeline
    has the phase) and the top initcalls of each kernel."""
    timed = timed or {}
    labels = list(profiles)
    lines = []
    head = f"{'phase (median ms, share of wall)':52}"
    sub = f"{'':52}"
    for label in labels:
        head += f" {label:>26}"
        sub += f" {'profiled':>16} {'timed':>9}"
    lines += [head, sub]
    for key, text in PHASES:
        row = f"{text:52}"
        for label in labels:
            p = profiles[label].get("phases_ms", {})
            total = (p.get("total") or {}).get("median")
            t = timed.get(label, {}).get(key)
            row += f" {_cell(p.get(key), total)} {_cell(t)}"
        lines.append(row)
    for label in labels:
        p = profiles[label]
        n = (p.get("initcall_count") or {}).get("median", 0)
        total = (p.get("initcall_ms") or {}).get("median", 0.0)
        lines += ["", f"top initcalls, {label}: {n:.0f} initcalls, {total:.1f} ms in all "
                  f"(median of {p['runs']} profiled boot{'s' if p['runs'] != 1 else ''})"]
        for e in p["top_initcalls"]:
            share = f"{100 * e['ms'] / total:5.1f}%" if total else "     -"
            ret = "" if e["ret"] == 0 else f"  (returned {e['ret']})"
            lines.append(f"  {e['ms']:9.2f} ms {share}  {e['name']}{ret}")
        bad = {k: v for k, v in p["anomalies"].items() if v}
        if bad:
            lines.append("  log anomalies: " + ", ".join(f"{k} {v}" for k, v in bad.items()))
        lag = clock_lag_ms(p, timed.get(label))
        early = (timed.get(label) or {}).get("kernel_early")
        if lag is not None and lag > max(100.0, early["median"]):
            lines += textwrap.wrap(f"note: early boot took {lag:.0f} ms longer than in the timed boots, "
                         f"though nothing is printed before kernel_start: the guest clock fell "
                         f"behind the host's by about that much. Kernel init and its rows are "
                         f"guest-clock time (kernel_start is init_started less the guest's uptime), "
                         f"so early boot absorbs what the guest clock lost", width=100,
                                   initial_indent="  ", subsequent_indent="        ")
    return "\n".join(lines)
