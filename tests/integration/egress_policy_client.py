#!/usr/bin/env python3
"""A policy callback held through the Python SDK (sdk/python, the
checkout's) for test_kilnd_egress_proxy: it holds a sandbox's egress
decision stream until killed.

    egress_policy_client.py SOCKET SANDBOX_ID MODE READY_FILE

MODE decide: a request whose path starts with /blocked is denied (451,
"blocked by the test's callback"); one whose path starts with /agent is
allowed with an x-agent header; a plain POST is allowed (its rule allows
GET only); everything else follows the rules. Each question goes to
stdout as one line. MODE silent: answers nothing in time (sleeps past a
500 ms deadline, on_timeout deny). READY_FILE is written once attached.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sdk", "python"))
from kiln import Kiln, egress  # noqa: E402


def decide(ev):
    print(json.dumps(ev), flush=True)
    if ev["kind"] != "request":
        return None
    if ev["path"].startswith("/blocked"):
        return egress.deny(status=451, reason="blocked by the test's callback")
    if ev["path"].startswith("/agent"):
        return egress.allow(set_headers={"x-agent": "a1"})
    if ev["method"] == "POST" and ev["proto"] == "http":
        return egress.allow()
    return None


def silent(ev):
    print(json.dumps(ev), flush=True)
    time.sleep(3)
    return None


def main():
    sock, sid, mode, ready = sys.argv[1:5]
    with Kiln(socket=sock) as k:
        sb = k.sandboxes.get(sid)
        fn, dl = (decide, 5000) if mode == "decide" else (silent, 500)
        with sb.egress.policy(fn, deadline_ms=dl, on_timeout="deny") as h:
            with open(ready, "w") as f:
                f.write("attached\n")
            print("end:", h.wait(), flush=True)


main()
