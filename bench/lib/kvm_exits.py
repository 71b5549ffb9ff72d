"""VM exits counted by the kernel that runs the VMM, for any VMM.

Two in-kernel histograms (ftrace hist triggers, no sampling, nothing read
per event): the `kvm:kvm_exit` tracepoint keyed by exit reason, and
`kvm:kvm_userspace_exit` (the exits that go on to the VMM process) keyed
by KVM_EXIT_* reason. `read()` before a boot and after it, `since()` the
difference (the histograms only grow): the counts cover every VM on the
machine, so run one VMM at a time (the nested harness's idle kvm-ballast
vCPUs never run and add nothing).

Needs root and tracefs (mounted here if it is not); `available()` says
why not otherwise, and the benchmarks then report time alone.
"""
import os
import re

TRACEFS = "/sys/kernel/tracing"
EXIT = f"{TRACEFS}/events/kvm/kvm_exit"
USER = f"{TRACEFS}/events/kvm/kvm_userspace_exit"
EXIT_HIST = "hist:keys=exit_reason,isa:vals=hitcount:size=2048"
USER_HIST = "hist:keys=reason:vals=hitcount"
# Device interrupts raised through the in-kernel irqchip (irqfd, KVM_IRQ_LINE,
# the in-kernel PIT on GSI 0, left out): one rising edge per injection.
IRQ = f"{TRACEFS}/events/kvm/kvm_set_irq"
IRQ_HIST = "hist:keys=gsi,level:vals=hitcount"
# System calls of the VMM threads that move device data, by thread name
# (kiln-vmm's device thread and vCPUs; QEMU's main loop and vCPU; vhost
# runs in the kernel and makes none): `syscalls.<thread>`.
SYS = f"{TRACEFS}/events/raw_syscalls/sys_enter"
SYS_HIST = "hist:keys=common_pid:vals=hitcount:size=4096"
SYS_THREADS = ("kiln-devices", "vcpu0", "qemu-system-x86", "CPU 0/KVM")

# AMD SVM exit codes (isa 2), grouped the way the boot profile reads them.
SVM = {0x60: "intr", 0x61: "nmi", 0x63: "init", 0x64: "irq_window", 0x65: "cr",
       0x6e: "rdtsc", 0x6f: "rdpmc", 0x72: "cpuid", 0x77: "pause", 0x78: "hlt",
       0x7b: "pio", 0x7c: "msr", 0x7f: "shutdown", 0x81: "vmmcall", 0x87: "rdtscp",
       0x89: "wbinvd", 0x8d: "xsetbv", 0x400: "npf"}
# Intel VMX basic exit reasons (isa 1).
VMX = {0: "exception", 1: "intr", 2: "triple_fault", 3: "init", 4: "sipi", 7: "irq_window",
       8: "nmi_window", 10: "cpuid", 12: "hlt", 18: "vmcall", 28: "cr", 29: "dr",
       30: "pio", 31: "msr", 32: "msr", 40: "pause", 44: "apic_access", 45: "eoi",
       48: "npf", 49: "mmio", 52: "preemption_timer", 55: "xsetbv", 56: "apic_write"}
# KVM_EXIT_* of the exits that reach the VMM process.
USERSPACE = {0: "unknown", 2: "pio", 5: "hlt", 6: "mmio", 7: "irq_window", 8: "shutdown",
             9: "fail_entry", 10: "signal", 17: "internal_error", 24: "system_event"}


def reason_name(isa, code):
    if isa == 2:
        if code in SVM:
            return SVM[code]
        if code < 0x40:
            return "cr" if code < 0x20 else "dr"
        if code < 0x60:
            return "exception"
    elif isa == 1 and code in VMX:
        return VMX[code]
    return f"other_{code:#x}"


def available(syscalls=False):
    """None when exits can be counted here, else why not. With `syscalls`,
    the VMM threads' system calls are counted too (a trigger on every
    system call of the machine: for benchmarks that measure throughput,
    not boot time)."""
    if not os.path.isdir(f"{TRACEFS}/events"):
        try:
            os.makedirs(TRACEFS, exist_ok=True)
            os.system(f"mount -t tracefs tracefs {TRACEFS} 2>/dev/null")
        except OSError:
            pass
    if not os.path.isdir(EXIT):
        return "no kvm:kvm_exit tracepoint (tracefs not mounted, no root, or kvm not loaded)"
    if not syscalls and os.path.isdir(SYS):
        # A bench that counted system calls and died before remove() left a
        # trigger on every system call of the machine: it would skew this
        # bench's timings.
        _untrigger(SYS, SYS_HIST)
    for ev, spec in ((EXIT, EXIT_HIST), (USER, USER_HIST), (IRQ, IRQ_HIST), (SYS, SYS_HIST)):
        if (ev in (IRQ, SYS) and not os.path.isdir(ev)) or (ev == SYS and not syscalls):
            continue
        try:
            with open(f"{ev}/trigger", "w") as f:
                f.write(spec)
        except OSError as e:
            if e.errno != 17:  # EEXIST: already set up by an earlier run
                return f"cannot set a hist trigger on {os.path.basename(ev)}: {e.strerror}"
    return None


def _hist(path):
    rows = []
    with open(f"{path}/hist") as f:
        for line in f:
            if line.startswith("{"):
                keys = dict((k, int(v)) for k, v in re.findall(r"(\w+):\s+(\d+)", line))
                rows.append(keys)
    return rows


def _comm(tid):
    try:
        with open(f"/proc/{tid}/comm") as f:
            return f.read().strip()
    except OSError:
        return None


def read():
    """Exits counted so far: {"total": n, "to_vmm": n, reason: n, ...,
    "to_vmm_" + reason: n, "irqs": device interrupts raised,
    "syscalls.<thread>": n}."""
    out = {"total": 0, "to_vmm": 0}
    for r in _hist(EXIT):
        name = reason_name(r.get("isa", 0), r["exit_reason"])
        out[name] = out.get(name, 0) + r["hitcount"]
        out["total"] += r["hitcount"]
    for r in _hist(USER):
        name = "to_vmm_" + USERSPACE.get(r["reason"], str(r["reason"]))
        out[name] = out.get(name, 0) + r["hitcount"]
        out["to_vmm"] += r["hitcount"]
    if os.path.isdir(IRQ):
        out["irqs"] = sum(r["hitcount"] for r in _hist(IRQ) if r.get("level") and r.get("gsi"))
    try:
        with open(f"{SYS}/hist") as f:
            for line in f:
                # Keyed by thread id, named from /proc while it lives (the
                # tracer's own name cache misses most threads): read it
                # while the VMM runs.
                m = re.match(r"\{ common_pid:\s*(\d+) \} hitcount:\s+(\d+)", line)
                name = _comm(m.group(1)) if m else None
                if name in SYS_THREADS:
                    key = "syscalls." + name
                    out[key] = out.get(key, 0) + int(m.group(2))
    except OSError:
        pass  # no such event, or not counted (available(syscalls=False))
    return out


def since(before):
    """Exits counted after `before` (an earlier read()), zero counts left out."""
    now = read()
    return {k: v - before.get(k, 0) for k, v in now.items() if v - before.get(k, 0) or k in ("total", "to_vmm")}


def _untrigger(ev, spec):
    try:
        with open(f"{ev}/trigger", "w") as f:
            f.write("!" + spec)
    except OSError:
        pass


def remove():
    for ev, spec in ((EXIT, EXIT_HIST), (USER, USER_HIST), (IRQ, IRQ_HIST), (SYS, SYS_HIST)):
        _untrigger(ev, spec)
