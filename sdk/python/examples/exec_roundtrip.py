#!/usr/bin/env python3
"""The median round trip of exec(["true"]) through the Python SDK, in ms.

    exec_roundtrip.py SOCKET SANDBOX_ID N

Runs N execs in a running sandbox (after one warm-up) and prints the
median (one number) on stdout; bench/ sets it beside the CLI's and a raw
socket call. Needs the kiln package (pip install ./sdk/python, or run from
a checkout: the checkout's sdk/python is tried first).
"""

import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from kiln import Kiln  # noqa: E402


def main() -> int:
    if len(sys.argv) != 4 or not sys.argv[3].isdigit() or int(sys.argv[3]) < 1:
        print("usage: exec_roundtrip.py SOCKET SANDBOX_ID N", file=sys.stderr)
        return 2
    sock, sandbox_id, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with Kiln(sock) as k:
        sb = k.sandboxes.get(sandbox_id)
        sb.exec(["true"])  # warm-up: the pooled connection, the guest's page cache
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            r = sb.exec(["true"])
            times.append((time.perf_counter() - t0) * 1000.0)
            if r.exit_code != 0:
                print(f"exec_roundtrip: true exited {r.exit_code}", file=sys.stderr)
                return 1
    print(f"{statistics.median(times):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
