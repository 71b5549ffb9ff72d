"""Which MSRs, ports, CPUID leaves and guest-physical pages a boot's VM
exits were about (bench/boot's exit detail, for any VMM).

kvm_exits.py counts exits by reason; this says what is behind a reason:
one boot with the kernel's kvm:kvm_msr, kvm_pio, kvm_cpuid and
kvm_page_fault tracepoints on (an ftrace ring buffer; a boot makes a few
thousand events), read back as text and counted. The tracing slows that
boot, so it is apart from the timed ones. `parse()` is pure (trace text
in, counts out) and unit-tested (tests/bench/test_boot_profile.py).
"""
import collections
import re

TRACEFS = "/sys/kernel/tracing"
EVENTS = ("kvm_msr", "kvm_pio", "kvm_cpuid", "kvm_page_fault")

# Guest-physical regions of kiln-vmm's and QEMU microvm's layouts that
# nested page faults land in, apart from RAM (faults there are RAM's first
# touches; with 2 MiB pages, a few).
REGIONS = ((0xfec00000, 0xfec01000, "ioapic"), (0xfee00000, 0xfee01000, "lapic"))
MMIO_HOLE = 0xc0000000

_MSR = re.compile(r"kvm_msr: msr_(read|write) ([0-9a-fA-F]+) = (?:0x)?[0-9a-fA-F]+( \(#GP\))?")
_PIO = re.compile(r"kvm_pio: pio_(read|write) at (0x[0-9a-fA-F]+) size \d+ count (\d+)")
_CPUID = re.compile(r"kvm_cpuid: func ([0-9a-fA-F]+)")
_NPF = re.compile(r"kvm_page_fault: (?:vcpu \d+ rip 0x[0-9a-fA-F]+ )?address (?:0x)?([0-9a-fA-F]+)")


def region(gpa):
    for lo, hi, name in REGIONS:
        if lo <= gpa < hi:
            return name
    if MMIO_HOLE <= gpa < 1 << 32:
        return "other mmio (virtio)"
    return "ram"


def cpuid_leaf(func):
    """Leaf name; a scan of the hypervisor range (0x40000100, 0x40000200,
    ... one exit each: Linux's PVH entry looks for Xen that way) is one row."""
    if 0x40000100 <= func < 0x40010000 and func & 0xff == 0:
        return "0x40000100-0x4000ff00 (hypervisor scan)"
    return f"{func:#x}"


def parse(text):
    """Counts of one traced boot: {"msr": {"write 0x6e0": n, ...},
    "pio": {"write 0x21": n}, "cpuid": {leaf: n}, "npf": {region: n}}.
    Lines of other events or of unknown shape are skipped."""
    out = {k: collections.Counter() for k in ("msr", "pio", "cpuid", "npf")}
    for line in text.splitlines():
        m = _MSR.search(line)
        if m:
            out["msr"][f"{m.group(1)} {int(m.group(2), 16):#x}{' #GP' if m.group(3) else ''}"] += 1
            continue
        m = _PIO.search(line)
        if m:
            out["pio"][f"{m.group(1)} {int(m.group(2), 16):#x}"] += 1
            continue
        m = _CPUID.search(line)
        if m:
            out["cpuid"][cpuid_leaf(int(m.group(1), 16))] += 1
            continue
        m = _NPF.search(line)
        if m:
            out["npf"][region(int(m.group(1), 16))] += 1
    return {k: dict(v) for k, v in out.items()}


def _write(path, value):
    with open(path, "w") as f:
        f.write(value)


def traced(boot):
    """Run `boot()` (one boot, nothing else on the machine's KVM) with the
    events on; (its result, parse() of the trace). Root and tracefs, as
    kvm_exits.available() checked."""
    _write(f"{TRACEFS}/buffer_size_kb", "16384")
    _write(f"{TRACEFS}/trace", "")
    for ev in EVENTS:
        _write(f"{TRACEFS}/events/kvm/{ev}/enable", "1")
    try:
        result = boot()
    finally:
        for ev in EVENTS:
            _write(f"{TRACEFS}/events/kvm/{ev}/enable", "0")
    with open(f"{TRACEFS}/trace", errors="replace") as f:
        text = f.read()
    _write(f"{TRACEFS}/trace", "")
    return result, parse(text)


def format_rows(detail, top=6):
    """Printable lines: per kind, the total and the `top` largest rows."""
    lines = []
    for kind in ("npf", "msr", "cpuid", "pio"):
        rows = sorted(detail.get(kind, {}).items(), key=lambda kv: (-kv[1], kv[0]))
        total = sum(n for _, n in rows)
        shown = ", ".join(f"{k} {n}" for k, n in rows[:top])
        more = f", {len(rows) - top} more" if len(rows) > top else ""
        lines.append(f"  {kind:6} {total:5}: {shown}{more}")
    return lines
