#!/usr/bin/env python3
"""Generates kiln/_surface.py (the synchronous client) from
kiln/_async_surface.py (the asyncio one), so the two surfaces cannot drift:
``async``/``await`` go, ``Async`` names become plain, async protocol
methods become their synchronous twins. tests/unit_test checks that the
committed file is what this writes.

    python3 tools/unasync.py          # rewrite kiln/_surface.py
    python3 tools/unasync.py --check  # exit 1 when it is stale
"""

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "kiln", "_async_surface.py")
DST = os.path.join(HERE, "..", "kiln", "_surface.py")

HEADER = '''"""The synchronous client: :class:`Kiln` and what hangs off it.

GENERATED from ``kiln/_async_surface.py`` by ``tools/unasync.py``: do not
edit; change the asyncio surface and run ``python3 tools/unasync.py``.
"""
'''

# (pattern, replacement), applied in order.
RULES = [
    (r"\basync def ", "def "),
    (r"\basync with ", "with "),
    (r"\basync for ", "for "),
    (r"\bawait ", ""),
    (r"\b__aenter__\b", "__enter__"),
    (r"\b__aexit__\b", "__exit__"),
    (r"\b__aiter__\b", "__iter__"),
    (r"\b__anext__\b", "__next__"),
    (r"\bStopAsyncIteration\b", "StopIteration"),
    (r"\bAwaitable\[([\w\"]+)\]", r"\1"),
    (r"\bAwaitable, ", ""),
    (r"\b_async_transport\b", "_transport"),
    (r"\b_async_surface\b", "_surface"),
    (r"\bAsync([A-Z]\w*)", r"\1"),
    (r"\baclose\b", "close"),
]


def convert(text: str) -> str:
    body = text.split('"""', 2)[2]  # the module docstring is replaced
    for pat, rep in RULES:
        body = re.sub(pat, rep, body)
    return HEADER + body


def main() -> int:
    with open(SRC, encoding="utf-8") as f:
        out = convert(f.read())
    if "--check" in sys.argv[1:]:
        try:
            with open(DST, encoding="utf-8") as f:
                current = f.read()
        except FileNotFoundError:
            current = ""
        if current != out:
            print("kiln/_surface.py is stale: run python3 sdk/python/tools/unasync.py", file=sys.stderr)
            return 1
        return 0
    with open(DST, "w", encoding="utf-8") as f:
        f.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
