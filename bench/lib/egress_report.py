"""bench/egress's figures: the guest's `kiln-bench-guest repeat` output
parsed, per case requests per second and mean/p50/p99 latency, the ratios
(b)/(a), (d)/(c) and (e)/(d), the table and build/bench/egress.json.

    python3 bench/lib/egress_report.py DIR [KEY=VALUE...]

DIR holds one file per case (a.out ... e.out: every batch's
output appended, "run EXIT USEC" per request and "wall SECONDS" per
batch; a missing file is a case that did not run); KEY=VALUE pairs go
into the JSON as they are (the run's settings). Exit 0 whatever the
numbers say; 1 only when DIR has no case at all.
"""
import json
import os
import sys
import time

# Case, its label, and what its ratio is taken against.
CASES = (("a", "(a) HTTP, packet filter alone"),
         ("b", "(b) HTTP through the proxy"),
         ("c", "(c) HTTPS spliced"),
         ("d", "(d) HTTPS intercepted"),
         ("e", "(e) (d) + a policy callback"))
RATIOS = (("b", "a"), ("d", "c"), ("e", "d"))


def parse(text):
    """(runs, walls) of one case's output: runs a list of (exit, usec),
    walls the batches' wall times in seconds. Other lines (a shell's, an
    error of the exec) are skipped."""
    runs, walls = [], []
    for line in text.splitlines():
        f = line.split()
        try:
            if len(f) == 3 and f[0] == "run":
                runs.append((int(f[1]), int(f[2])))
            elif len(f) == 2 and f[0] == "wall":
                walls.append(float(f[1]))
        except ValueError:
            continue
    return runs, walls


def percentile(sorted_v, p):
    """Nearest rank: the smallest value with at least p% at or below it."""
    if not sorted_v:
        return None
    k = max(1, -(-len(sorted_v) * p // 100))
    return sorted_v[int(k) - 1]


def summarize(runs, walls):
    """One case's figures: requests that exited 0 counted and timed (ms),
    requests per second over the batches' wall time (every request's, a
    failed one's too: the loop's rate). None where there is nothing."""
    ok = sorted(u / 1000.0 for rc, u in runs if rc == 0)
    wall = sum(walls)
    return {"requests": len(runs), "failed": len(runs) - len(ok),
            "req_per_s": len(ok) / wall if wall > 0 and ok else None,
            "mean_ms": sum(ok) / len(ok) if ok else None,
            "p50_ms": percentile(ok, 50), "p99_ms": percentile(ok, 99)}


def ratios(cases):
    """Per pair (x, base): requests/s x/base, mean latency x/base and the
    latency x adds (ms), None where a side has no figure."""
    out = {}
    for x, base in RATIOS:
        cx, cb = cases.get(x) or {}, cases.get(base) or {}

        def div(k):
            a, b = cx.get(k), cb.get(k)
            return a / b if isinstance(a, float) and isinstance(b, float) and b > 0 else None

        def sub(k):
            a, b = cx.get(k), cb.get(k)
            return a - b if isinstance(a, float) and isinstance(b, float) else None
        out[f"{x}/{base}"] = {"req_per_s": div("req_per_s"), "mean_ms": div("mean_ms"),
                              "p50_ms": div("p50_ms"), "added_mean_ms": sub("mean_ms"),
                              "added_p50_ms": sub("p50_ms")}
    return out


def fmt(v, w=9, p=1):
    return f"{v:{w}.{p}f}" if isinstance(v, (int, float)) else f"{'-':>{w}}"


def render(cases, rat):
    lines = [f"{'case':32} {'req/s':>9} {'mean ms':>9} {'p50 ms':>9} {'p99 ms':>9} {'failed':>7}"]
    for key, label in CASES:
        c = cases.get(key)
        if c is None:
            lines.append(f"{label:32} {'did not run':>9}")
            continue
        failed = f"{c['failed']}/{c['requests']}"
        lines.append(f"{label:32} {fmt(c['req_per_s'], 9, 2)} {fmt(c['mean_ms'])} {fmt(c['p50_ms'])} "
                     f"{fmt(c['p99_ms'])} {failed:>7}")
    heads = [f"{x}/{b}" for x, b in RATIOS]
    lines.append("")
    lines.append(f"{'ratio':32} " + " ".join(f"{'(' + x + ')/(' + b + ')':>9}" for x, b in RATIOS))
    for key, label, p in (("req_per_s", "requests per second", 2), ("mean_ms", "mean latency", 2),
                          ("p50_ms", "p50 latency", 2), ("added_mean_ms", "added mean latency (ms)", 1),
                          ("added_p50_ms", "added p50 latency (ms)", 1)):
        lines.append(f"{label:32} " + " ".join(fmt(rat[h][key], 9, p) for h in heads))
    return lines


def report(d, settings):
    """(lines, result) for the case files in d; result None when none ran."""
    cases = {}
    for key, _ in CASES:
        try:
            with open(os.path.join(d, f"{key}.out")) as f:
                cases[key] = summarize(*parse(f.read()))
        except FileNotFoundError:
            continue
    if not cases:
        return [], None
    rat = ratios(cases)
    res = dict(settings)
    res.update({"cases": cases, "ratios": rat})
    return render(cases, rat), res


def main(argv):
    if len(argv) < 2:
        print("usage: egress_report.py DIR [KEY=VALUE...]", file=sys.stderr)
        return 2
    settings = dict(a.split("=", 1) for a in argv[2:] if "=" in a)
    for k, v in settings.items():
        try:
            settings[k] = int(v)
        except ValueError:
            pass
    lines, res = report(argv[1], settings)
    if res is None:
        print(f"bench/egress: no case ran (no *.out in {argv[1]})", file=sys.stderr)
        return 1
    res.setdefault("harness", "nested" if os.environ.get("KILN_IN_HARNESS") else "direct")
    res["time"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    for line in lines:
        print(line)
    out = os.environ.get("KILN_BENCH_DIR", "build/bench")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "egress.json"), "w") as f:
        json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
