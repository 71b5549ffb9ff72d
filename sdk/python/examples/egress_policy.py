#!/usr/bin/env python3
"""An egress policy callback: the sandbox may POST to api.github.com only;
every other request it makes gets an ``x-agent`` header; TLS connects are
left to the sandbox's static rules.

    KILN_SOCKET=/run/kiln/kiln.sock egress_policy.py SANDBOX_ID

The sandbox needs ``http`` rules in its firewall (its flows then go
through the egress proxy; docs/api.md, "The egress decision stream"). Prints each
decision; runs until the stream ends (the sandbox stops) or Ctrl-C. Needs
the kiln package (pip install ./sdk/python, or run from a checkout: the
checkout's sdk/python is tried first).
"""

import os
import sys
from typing import Any, Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from kiln import Kiln, egress  # noqa: E402


def policy(ev: dict[str, Any]) -> Optional[dict[str, Any]]:
    if ev["kind"] != "request":
        return None  # a TLS connect: the static rules decide
    where = f"{ev['method']} {ev['name']}{ev['path']}"
    if ev["method"] == "POST" and ev["name"] != "api.github.com":
        print(f"deny {where}", flush=True)
        return egress.deny(status=403, reason="POST only to api.github.com")
    print(f"allow {where}", flush=True)
    return egress.allow(set_headers={"x-agent": "kiln-example"})


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: egress_policy.py SANDBOX_ID", file=sys.stderr)
        return 2
    with Kiln() as k:
        sb = k.sandboxes.get(sys.argv[1])
        with sb.egress.policy(policy, deadline_ms=2000, on_timeout="deny") as handle:
            try:
                reason = handle.wait()
            except KeyboardInterrupt:
                reason = "interrupted"
    print(f"ended: {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
