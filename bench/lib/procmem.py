"""What bench/density reads from /proc: a process's PSS and USS, the
process table, which processes make up one kilnd sandbox, a kiln-vmm's
guest RAM split out of its PSS and USS, and the figures it derives from
them (unit test: tests/bench/test_procmem.py)."""
import math
import os
import re


def parse_smaps_rollup(text):
    """(PSS, USS) in KiB from smaps_rollup's text; USS is Private_Clean +
    Private_Dirty (the pages this process alone maps)."""
    pss = uss = 0
    for line in text.splitlines():
        k, _, rest = line.partition(":")
        words = rest.split()
        if not words or not words[0].isdigit():
            continue
        if k == "Pss":
            pss = int(words[0])
        elif k in ("Private_Clean", "Private_Dirty"):
            uss += int(words[0])
    return pss, uss


def smaps(pid, proc="/proc"):
    """(PSS, USS) of a process in KiB, or None when it is gone."""
    try:
        with open(os.path.join(proc, str(pid), "smaps_rollup")) as f:
            return parse_smaps_rollup(f.read())
    except OSError:
        return None


_VMA = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) (\S+)")
_HUGE_2M = 2 << 20


def parse_smaps(text):
    """/proc/PID/smaps as a list of mappings in address order: {"start",
    "end" (bytes), "perms", "pss", "uss" (Private_Clean + Private_Dirty),
    "anon" (Anonymous: pages written since mapped, or never from a file)}
    with the sizes in KiB."""
    maps = []
    for line in text.splitlines():
        m = _VMA.match(line)
        if m:
            maps.append({"start": int(m.group(1), 16), "end": int(m.group(2), 16), "perms": m.group(3),
                         "pss": 0, "uss": 0, "anon": 0})
            continue
        k, _, rest = line.partition(":")
        words = rest.split()
        if not maps or not words or not words[0].isdigit():
            continue
        if k == "Pss":
            maps[-1]["pss"] = int(words[0])
        elif k in ("Private_Clean", "Private_Dirty"):
            maps[-1]["uss"] += int(words[0])
        elif k == "Anonymous":
            maps[-1]["anon"] = int(words[0])
    return sorted(maps, key=lambda v: v["start"])


def guest_region(maps, size):
    """(first, last) index into maps of a VMM's guest RAM: the one run of
    adjacent read-write mappings spanning exactly size bytes (kiln-vmm
    maps guest RAM as one reservation, 2 MiB aligned, then maps a
    snapshot's file and layers over it: lib/guest/guest_mem.c); among
    several such runs the 2 MiB aligned ones; None when there is none or
    more than one is left."""
    runs = []
    for i in range(len(maps)):
        for j in range(i, len(maps)):
            if j > i and maps[j]["start"] != maps[j - 1]["end"]:
                break
            if not maps[j]["perms"].startswith("rw"):
                break
            span = maps[j]["end"] - maps[i]["start"]
            if span == size:
                runs.append((i, j))
            if span >= size:
                break
    if len(runs) > 1:
        runs = [r for r in runs if maps[r[0]]["start"] % _HUGE_2M == 0]
    return runs[0] if len(runs) == 1 else None


def split_guest(maps, size):
    """{"pss", "uss"} of the whole process and {"guest_pss", "guest_uss",
    "guest_anon"} of its guest RAM of size bytes (guest_anon: the guest
    pages it holds privately, dirtied since the snapshot or never from a
    file), KiB; None when guest_region finds no guest RAM."""
    r = guest_region(maps, size)
    if r is None:
        return None
    guest = maps[r[0]:r[1] + 1]
    return {"pss": sum(v["pss"] for v in maps), "uss": sum(v["uss"] for v in maps),
            "guest_pss": sum(v["pss"] for v in guest), "guest_uss": sum(v["uss"] for v in guest),
            "guest_anon": sum(v["anon"] for v in guest)}


def vmm_guest(pid, size, proc="/proc"):
    """split_guest of a kiln-vmm's /proc/PID/smaps; None when it is gone
    or its guest RAM is not found."""
    try:
        with open(os.path.join(proc, str(pid), "smaps")) as f:
            return split_guest(parse_smaps(f.read()), size)
    except OSError:
        return None


def parse_stat(text):
    """(ppid, comm) from /proc/PID/stat: comm is between the first '(' and
    the last ')' (it may hold either)."""
    comm = text[text.index("(") + 1:text.rindex(")")]
    return int(text[text.rindex(")") + 2:].split()[1]), comm


def proc_table(proc="/proc"):
    """pid -> (ppid, comm) of every process."""
    t = {}
    for d in os.listdir(proc):
        if not d.isdigit():
            continue
        try:
            with open(os.path.join(proc, d, "stat")) as f:
                t[int(d)] = parse_stat(f.read())
        except (OSError, ValueError, IndexError):
            continue
    return t


def sandbox_pids(vmm_pid, kilnd_pid, table):
    """{pid: kind} of one sandbox: its kiln-vmm (the sandbox's `pid`), the
    keeper that started it (`kilnd --keeper`, kiln-vmm's parent), and every
    other child of either (passt, by its comm)."""
    if table.get(vmm_pid, (0, ""))[1] != "kiln-vmm":
        raise RuntimeError(f"sandbox pid {vmm_pid} is not a kiln-vmm: {table.get(vmm_pid)}")
    pids = {vmm_pid: "kiln-vmm"}
    keeper = table[vmm_pid][0]
    if keeper not in (0, 1, kilnd_pid):
        pids[keeper] = "keeper"
    for p, (pp, comm) in table.items():
        if pp in pids and p not in pids:
            pids[p] = comm
    return pids


def sandbox_memory(vmm_pid, kilnd_pid, table, proc="/proc"):
    """{kind: [PSS, USS]} in KiB of one sandbox's processes."""
    out = {}
    for p, kind in sandbox_pids(vmm_pid, kilnd_pid, table).items():
        m = smaps(p, proc)
        if m:
            a = out.setdefault(kind, [0, 0])
            a[0] += m[0]
            a[1] += m[1]
    return out


def pct(v, q):
    """Nearest-rank percentile of a non-empty list."""
    v = sorted(v)
    return v[max(0, math.ceil(q * len(v)) - 1)]


def largest_n(batches, avail_kib, floor_kib=1024):
    """How many sandboxes 80% of avail_kib holds at the largest cost per
    sandbox the batches measured (MemAvailable's drop or PSS, at least
    floor_kib)."""
    per = max(max(b["mem_available_drop_kib"], b["pss_kib"]) for b in batches)
    return int(avail_kib * 0.8 / max(per, floor_kib))
