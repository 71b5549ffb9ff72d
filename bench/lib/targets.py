"""The performance targets' table (docs/architecture.md, "Performance
targets"), from the results the benches saved.

Pure: rows(boot, snapshot, devices, density) takes the parsed JSON
documents (build/bench/{boot,snapshot,devices,density}.json; any may be
None when its bench has not run, or from an older bench that lacks a
field) and returns one row per figure. Nothing here measures; the benches
do, and each row names the bench that produces it. A row's note says
where its figure came from when that is not plain (another bench's cold
boot, which batch, what could not be separated).
"""
import math

MIB = 1024 * 1024

BOOT_LABELS = ("bzImage", "vmlinux (PVH)")


def _num(cur):
    if isinstance(cur, bool) or not isinstance(cur, (int, float)) or not math.isfinite(cur):
        return None
    return float(cur)


def _get(doc, *path):
    """doc[path[0]][path[1]]..., or None when any step is missing or not a
    number at the end (the files are ours, but may be from an older bench)."""
    cur = doc
    for p in path:
        if not isinstance(cur, dict) or p not in cur:
            return None
        cur = cur[p]
    return _num(cur)


def _ratio(a, b):
    if a is None or b is None or b <= 0:
        return None
    return a / b


def _p50(doc, key):
    """Nearest-rank median of doc[key], a list of numbers; None when it is
    not one (bench/lib/procmem.py's pct, which bench/density prints)."""
    v = doc.get(key) if isinstance(doc, dict) else None
    if not isinstance(v, list) or not v:
        return None
    nums = [_num(x) for x in v]
    if any(x is None for x in nums):
        return None
    nums.sort()
    return nums[max(0, math.ceil(0.5 * len(nums)) - 1)]


def _batches(density, path):
    """{N: batch} of density.json's kilnd or libkiln half."""
    out = {}
    half = density.get(path) if isinstance(density, dict) else None
    for b in half if isinstance(half, list) else []:
        n = _get(b, "n")
        if n is not None and n >= 1 and n == int(n):
            out[int(n)] = b
    return out


def _row(figure, bench, value, op, target, unit="", note="", unjudged=None):
    """One row; `unjudged` says why a figure that exists cannot be held to
    its target on the machine that measured it (met stays None)."""
    met = None
    if value is not None and unjudged is None:
        met = value <= target if op == "<=" else value >= target
    return {"figure": figure, "bench": bench, "value": value, "op": op,
            "target": target, "unit": unit, "met": met, "note": note, "unjudged": unjudged}


def _concurrent(batches, path, cpus):
    """32 at once all ready / one fork alone (the N=1 batch's all ready).

    32 guests resuming at once need 32 x one fork's CPU time; with `cpus`
    CPUs the best the batch can do is 32 / cpus x one fork, so below 8 CPUs
    the <= 4 target cannot be met by any VMM and the row is not judged."""
    one, many = _get(batches.get(1), "all_ready_ms"), _get(batches.get(32), "all_ready_ms")
    note = "N=32 batch's all ready / N=1 batch's"
    if one is not None and many is not None:
        note += f": {many:.0f} / {one:.0f} ms"
    unjudged = None
    cpus = None if cpus is None else int(cpus)
    if cpus is not None and cpus * 4 < 32:
        unjudged = (f"not judged: {cpus} CPU{'s' if cpus != 1 else ''} (32 forks at once cannot "
                    f"finish in under {32 / cpus:.0f} x one fork's time below 8 CPUs)")
        note += f"; the floor on {cpus} CPU{'s' if cpus != 1 else ''} is {32 / cpus:.0f}"
    return _row(f"32 concurrent forks all ready / one fork ({path})", "density",
                _ratio(many, one), "<=", 4, "", note, unjudged)


def _density_rows(snapshot, density, cold):
    out = []
    lib = _batches(density, "libkiln")
    fork = _p50(lib.get(1), "ready_ms")
    note = "density's libkiln N=1 fork to ready" + ("" if fork is None else f" {fork:.0f} ms")
    note += " / bench/snapshot's cold boot" + ("" if cold is None else f" {cold:.0f} ms")
    note += " (density.json records no cold boot)"
    if isinstance(density, dict) and density.get("image") not in (None, "minimal-test"):
        note += f"; density ran on the {density['image']} image"
    out.append(_row("fork through libkiln in one process / cold boot",
                    "density" if fork is None else "snapshot", _ratio(fork, cold), "<=", 0.02, "", note))
    kd = _batches(density, "kilnd")
    cpus = _get(density, "host", "cpus")
    out.append(_concurrent(kd, "kilnd", cpus))
    out.append(_concurrent(lib, "libkiln", cpus))
    # Memory: the largest kilnd batch (the most forks sharing the snapshot's pages).
    big = kd[max(kd)] if kd else None
    n = f"kilnd N={max(kd)}, median" if kd else "kilnd"
    less = _get(big, "pss_less_dirtied_kib")
    if less is not None:
        value, note = less / 1024, f"{n}: PSS less the guest pages its kiln-vmm holds privately"
    else:
        pss = _get(big, "pss_kib")
        value = None if pss is None else pss / 1024
        note = "" if pss is None else (f"{n}: PSS, plus dirtied pages not separated (density.json has "
                                       "no split: an older bench, or guest RAM not found)")
    out.append(_row("PSS per idle forked sandbox, beyond the guest pages it dirtied", "density",
                    value, "<=", 1, " MiB", note))
    vmm = _get(big, "by_process", "kiln-vmm", "uss_beyond_guest_kib")
    note = f"{n}: Private_Clean + Private_Dirty outside guest RAM"
    if vmm is None:
        vmm = _get(big, "by_process", "kiln-vmm", "uss_kib")
        note = "" if vmm is None else f"{n}: USS, guest RAM not separated (density.json has no split)"
    out.append(_row("private memory (USS) per kiln-vmm beyond guest RAM", "density",
                    vmm, "<=", 256, " KiB", note))
    return out


def rows(boot, snapshot, devices, density=None):
    out = []
    for label in BOOT_LABELS:
        out.append(_row(f"boot wall, kiln / QEMU microvm ({label})", "boot",
                        _get(boot, "ratios", label), "<=", 0.5))
    for label in BOOT_LABELS:
        out.append(_row(f"VM exits per boot, kiln / QEMU microvm ({label})", "boot",
                        _get(boot, "ratios", f"{label} exits.total"), "<=", 0.5))
    cold = _get(snapshot, "cold_boot_ms", "median")
    out.append(_row("wake to ready agent / cold boot", "snapshot",
                    _ratio(_get(snapshot, "wake_ms", "median"), cold), "<=", 0.05))
    out.append(_row("fork through kilnd to a ready agent / cold boot", "snapshot",
                    _ratio(_get(snapshot, "fork_ms", "median"), cold), "<=", 0.05))
    out.append(_row("create through the warm pool / cold create", "snapshot",
                    _ratio(_get(snapshot, "pool_create_ms", "median"), cold), "<=", 0.02))
    out += _density_rows(snapshot, density, cold)
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
    """The rows as text lines: figure, value, target, met; a row's note on
    the line under it."""
    width = max([56] + [len(r["figure"]) for r in table])
    lines = [f"{'figure (nested harness: ratios within one run)':{width}} {'now':>13} {'target':>10}  met"]
    for r in table:
        val = "-" if r["value"] is None else f"{r['value']:.3f}{r['unit']}"
        tgt = f"{r['op']} {r['target']}{r['unit']}"
        met = {True: "yes", False: "NO", None: f"no data: make bench-{r['bench']}"}[r["met"]]
        if r.get("unjudged"):
            met = r["unjudged"]
        lines.append(f"{r['figure']:{width}} {val:>13} {tgt:>10}  {met}")
        if r.get("note"):
            lines.append(f"    {r['note']}")
    return lines
