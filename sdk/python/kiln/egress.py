"""Answers of an egress policy callback (``sb.egress.policy(fn)``,
``sb.egress.on_request(fn)``; docs/api.md, "The egress decision stream").

``fn(event)`` gets each question of kilnd's decision stream as the dict
kilnd sent: a ``connect`` (a TLS flow before it is spliced or decrypted:
``id``, ``src``, ``dst``, ``name``, ``proto``, ``static``, ``rule``,
``intercept``) or a ``request`` (``id``, ``flow``, ``src``, ``dst``,
``name``, ``method``, ``path``, ``headers`` as ``[name, value]`` pairs,
``inject``, ``static``, ``rule``); ``event["kind"]`` says which. It
returns one of these (plain dicts, ``{"decision": ...}``, may also be
written by hand):

    from kiln import egress
    egress.allow()                                  # let it through
    egress.allow(set_headers={"x-agent": "a1"},     # a request only:
                 remove_headers=["user-agent"])     #   change its header
    egress.deny(status=403, reason="no POSTs")      # the guest gets this status
    egress.rules()                                  # the static rules decide (None too)
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Optional

__all__ = ["allow", "deny", "rules", "DEADLINE_MS_MIN", "DEADLINE_MS_MAX", "ON_TIMEOUT"]

Decision = dict[str, Any]

DEADLINE_MS_MIN = 10
DEADLINE_MS_MAX = 60000
ON_TIMEOUT = ("deny", "rules")
MAX_HEADERS = 16  # set_headers and remove_headers, each
MAX_HEADER_NAME = 64
MAX_HEADER_VALUE = 4096
MAX_REASON = 200
# The reason of the deny sent for a callback that raised or answered
# something kilnd would refuse.
FAILED_REASON = "policy callback failed"

_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9a-z]+$")
_VALUE = re.compile(r"^[\x20-\x7e\t]*$")


def allow(*, set_headers: Optional[Mapping[str, str]] = None,
          remove_headers: Optional[Iterable[str]] = None) -> Decision:
    """Let the flow or request through. On a ``request`` only:
    ``set_headers`` (each replaces every field of its name) and
    ``remove_headers``, at most 16 each; names are lower-case HTTP tokens
    of up to 64 bytes (sent in lower case), values up to 4096 bytes of visible ASCII, space and
    tab."""
    out: Decision = {"decision": "allow"}
    if set_headers is not None:
        out["set_headers"] = dict(set_headers)
    if remove_headers is not None:
        if isinstance(remove_headers, str):
            raise TypeError("egress.allow: remove_headers is a list of header names, not one string")
        out["remove_headers"] = list(remove_headers)
    out = _lower_names(out)
    check_answer(out, "request")
    return out


def deny(status: int = 403, reason: Optional[str] = None) -> Decision:
    """Refuse it: the guest gets HTTP ``status`` (400..599, default 403;
    a refused TLS connect is closed) with a body naming ``reason`` (up to
    200 bytes, printable)."""
    out: Decision = {"decision": "deny", "status": status}
    if reason is not None:
        out["reason"] = reason
    check_answer(out, "request")
    return out


def rules() -> Decision:
    """What the sandbox's static firewall rules decide (as if no callback
    were attached); a callback returning None means the same."""
    return {"decision": "rules"}


def check_params(fn: Any, deadline_ms: Any, on_timeout: Any) -> dict[str, Any]:
    """The stream's query, or ValueError/TypeError naming the bad one
    (before anything is sent to kilnd)."""
    if not callable(fn):
        raise TypeError(f"egress.policy: fn is a function taking an event, not {type(fn).__name__}")
    if isinstance(deadline_ms, bool) or not isinstance(deadline_ms, int):
        raise TypeError(f"egress.policy: deadline_ms is an int of milliseconds "
                        f"({DEADLINE_MS_MIN}..{DEADLINE_MS_MAX}), not {type(deadline_ms).__name__}")
    if not DEADLINE_MS_MIN <= deadline_ms <= DEADLINE_MS_MAX:
        raise ValueError(f"egress.policy: deadline_ms {deadline_ms} is out of range: give "
                         f"{DEADLINE_MS_MIN}..{DEADLINE_MS_MAX} (how long each question waits for the callback)")
    if on_timeout not in ON_TIMEOUT:
        raise ValueError(f"egress.policy: on_timeout {on_timeout!r}: give \"deny\" (fail closed) or "
                         "\"rules\" (the static rules decide)")
    return {"deadline_ms": deadline_ms, "on_timeout": on_timeout}


def answer_for(kind: str, result: Any) -> Decision:
    """The answer a callback's return value means (None: rules), checked as
    kilnd checks it: ValueError/TypeError saying what is wrong."""
    if result is None:
        return rules()
    if not isinstance(result, Mapping):
        raise TypeError(f"the policy callback returned a {type(result).__name__}: return "
                        "kiln.egress.allow(), deny(), rules(), a {\"decision\": ...} dict or None")
    out = _lower_names(dict(result))
    check_answer(out, kind)
    return out


def _lower_names(ans: Decision) -> Decision:
    """Header names in lower case (kilnd takes them so; HTTP's are
    case-insensitive)."""
    sets = ans.get("set_headers")
    if isinstance(sets, Mapping):
        ans["set_headers"] = {k.lower() if isinstance(k, str) else k: v for k, v in sets.items()}
    removes = ans.get("remove_headers")
    if isinstance(removes, (list, tuple)):
        ans["remove_headers"] = [n.lower() if isinstance(n, str) else n for n in removes]
    return ans


def check_answer(ans: Mapping[str, Any], kind: str) -> None:
    known = {"decision", "status", "reason", "set_headers", "remove_headers"}
    extra = sorted(set(ans) - known)
    if extra:
        raise ValueError(f"the answer has unknown fields {extra}: it takes {sorted(known)}")
    decision = ans.get("decision")
    if decision not in ("allow", "deny", "rules"):
        raise ValueError(f"the answer's decision {decision!r}: give \"allow\", \"deny\" or \"rules\"")
    if decision != "deny" and ("status" in ans or "reason" in ans):
        raise ValueError("status and reason go with decision \"deny\" only")
    if decision == "deny":
        status = ans.get("status", 403)
        if isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599:
            raise ValueError(f"a deny's status {status!r}: give an HTTP status 400..599")
        reason = ans.get("reason")
        if reason is not None:
            if not isinstance(reason, str):
                raise TypeError(f"a deny's reason is a str, not {type(reason).__name__}")
            if len(reason.encode("utf-8")) > MAX_REASON:
                raise ValueError(f"a deny's reason is over {MAX_REASON} bytes")
            if not reason.isprintable():
                raise ValueError("a deny's reason holds a control character: printable text only")
    has_headers = "set_headers" in ans or "remove_headers" in ans
    if has_headers and (decision != "allow" or kind != "request"):
        raise ValueError("set_headers and remove_headers go with decision \"allow\" on a request only "
                         f"(this is a {decision!r} on a {kind})")
    sets = ans.get("set_headers")
    if sets is not None:
        if not isinstance(sets, Mapping):
            raise TypeError("set_headers is a dict of header name to value")
        if len(sets) > MAX_HEADERS:
            raise ValueError(f"set_headers has {len(sets)} headers: at most {MAX_HEADERS}")
        for name, value in sets.items():
            _check_name(name, "set_headers")
            if not isinstance(value, str):
                raise TypeError(f"set_headers[{name!r}] is a str, not {type(value).__name__}")
            if len(value) > MAX_HEADER_VALUE or not _VALUE.match(value):
                raise ValueError(f"set_headers[{name!r}]: a value is up to {MAX_HEADER_VALUE} bytes of visible "
                                 "ASCII, space and tab")
    removes = ans.get("remove_headers")
    if removes is not None:
        if isinstance(removes, (str, bytes)) or not isinstance(removes, (list, tuple)):
            raise TypeError("remove_headers is a list of header names")
        if len(removes) > MAX_HEADERS:
            raise ValueError(f"remove_headers has {len(removes)} names: at most {MAX_HEADERS}")
        for name in removes:
            _check_name(name, "remove_headers")


def _check_name(name: Any, where: str) -> None:
    if not isinstance(name, str):
        raise TypeError(f"{where}: a header name is a str, not {type(name).__name__}")
    if len(name) > MAX_HEADER_NAME or not _TOKEN.match(name):
        raise ValueError(f"{where}: header name {name[:80]!r} is not an HTTP token of up to "
                         f"{MAX_HEADER_NAME} bytes (letters, digits and !#$%&'*+-.^_`|~)")
