"""The performance targets' table (docs/architecture.md, "Performance
targets"), from the results the benches saved.

Pure: rows(boot, snapshot, devices) takes the three parsed JSON documents
(build/bench/{boot,snapshot,devices}.json; any may be None when its bench
has not run) and returns one row per figure. Nothing here measures; the
benches do, and each row names the bench that produces it.
"""

MIB = 1024 * 1024

# (figure, bench, comparison, target). "<=": lower is better.
BOOT_LABELS = ("bzImage", "vmlinux (PVH)")


def _get(doc, *path):
    """doc[path[0]][path[1]]..., or None when any step is missing or not a
    number at the end (the files are ours, but may be from an older bench)."""
    cur = doc
    for p in path:
        if not isinstance(cur, dict) or p not in cur:
            return None
        cur = cur[p]
    if isinstance(cur, bool) or not isinstance(cur, (int, float)):
        return None
    return float(cur)


def _ratio(a, b):
    if a is None or b is None or b <= 0:
        return None
    return a / b


def _row(figure, bench, value, op, target, unit=""):
    met = None
    if value is not None:
        met = value <= target if op == "<=" else value >= target
    return {"figure": figure, "bench": bench, "value": value, "op": op,
            "target": target, "unit": unit, "met": met}


def rows(boot, snapshot, devices):
    out = []
    for label in BOOT_LABELS:
        out.append(_row(f"boot wall, kiln / QEMU microvm ({label})", "boot",
                        _get(boot, "ratios", label), "<=", 0.5))
    for label in BOOT_LABELS:
        out.append(_row(f"VM exits per boot, kiln / QEMU microvm ({label})", "boot",
                        _get(boot, "ratios", f"{label} exits.total"), "<=", 0.3))
    cold = _get(snapshot, "cold_boot_ms", "median")
    out.append(_row("wake to ready agent / cold boot", "snapshot",
                    _ratio(_get(snapshot, "wake_ms", "median"), cold), "<=", 0.05))
    out.append(_row("fork to ready agent / cold boot", "snapshot",
                    _ratio(_get(snapshot, "fork_ms", "median"), cold), "<=", 0.03))
    out.append(_row("create through the warm pool / cold create", "snapshot",
                    _ratio(_get(snapshot, "pool_create_ms", "median"), cold), "<=", 0.02))
    stored = _get(snapshot, "incremental", "second", "memory_stored_bytes")
    out.append(_row("second checkpoint after 10 MiB in 1 GiB: stored", "snapshot",
                    None if stored is None else stored / MIB, "<=", 16, " MiB"))
    out.append(_row("second checkpoint: pause / the first's", "snapshot",
                    _ratio(_get(snapshot, "incremental", "second", "snapshot_ms"),
                           _get(snapshot, "incremental", "first", "snapshot_ms")), "<=", 0.2))
    out.append(_row("vsock host->guest, kiln / QEMU", "devices",
                    _get(devices, "figures", "vsock_host_to_guest", "ratio"), ">=", 1.5))
    return out


def render(table):
    """The rows as text lines: figure, value, target, met."""
    lines = [f"{'figure (nested harness: ratios within one run)':56} {'now':>11} {'target':>10}  met"]
    for r in table:
        val = "-" if r["value"] is None else f"{r['value']:.3f}{r['unit']}"
        tgt = f"{r['op']} {r['target']}{r['unit']}"
        met = {True: "yes", False: "NO", None: f"no data: make bench-{r['bench']}"}[r["met"]]
        lines.append(f"{r['figure']:56} {val:>11} {tgt:>10}  {met}")
    return lines
