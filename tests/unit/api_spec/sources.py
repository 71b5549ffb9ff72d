"""What the tree's C says about the API, read by regex: the route table,
the CLI's request paths and bodies, the endpoint files; and the helpers
the other readers share (docs/api.md: doc_examples.py; the SDKs:
sdk_calls.py). Each reader returns plain data; the checks are in
tests/unit/api_spec_test.

Paths are compared by shape: every {param} is "{}", so docs and SDKs may
name parameters as they like while the spec names them as the route
table does.
"""
import glob
import os
import re

METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH", "HEAD")


def shape(path):
    return re.sub(r"\{[^}/]*\}", "{}", path)


def strip_c_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


# ---- the route table ----

# Where the route table lives, newest layout first: the one table of
# endpoints/ (`{ "GET", "/v1/x/{id}", handler, BODY_..., limit },`, one
# entry a line), else http/route.c's patterns with their method lists.
ROUTE_TABLES = ("api/kilnd/endpoints/routes.c", "api/kilnd/http/route.c")

_NEW_ENTRY = re.compile(r'\{\s*"(' + "|".join(METHODS) + r')"\s*,\s*"(/[^"]*)"\s*,')
_OLD_PATTERN = re.compile(r'\{\s*"(/[^"]*)"\s*,\s*"[^"]*"\s*,')
_OLD_OP = re.compile(r'\{\s*"(' + "|".join(METHODS) + r')"\s*,\s*OP_\w+\s*\}')


def route_table_file(top):
    """The first of ROUTE_TABLES that exists, else the one C file under
    api/kilnd holding entries of the one-table layout."""
    for rel in ROUTE_TABLES:
        if os.path.exists(os.path.join(top, rel)):
            return rel
    found = []
    for f in sorted(glob.glob(os.path.join(top, "api/kilnd/**/*.c"), recursive=True)):
        with open(f, encoding="utf-8") as fh:
            if len(_NEW_ENTRY.findall(strip_c_comments(fh.read()))) >= 10:
                found.append(os.path.relpath(f, top))
    return found[0] if len(found) == 1 else None


def parse_route_table(text):
    """{(METHOD, pattern)} from either layout."""
    text = strip_c_comments(text)
    routes = {(m, p) for m, p in _NEW_ENTRY.findall(text)}
    if routes:
        return routes
    starts = [(m.start(), m.group(1)) for m in _OLD_PATTERN.finditer(text)]
    for i, (pos, pattern) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
        for method in _OLD_OP.findall(text[pos:end]):
            routes.add((method, pattern))
    return routes


_NEW_BODY = re.compile(r'\{\s*"(' + "|".join(METHODS) + r')"\s*,\s*"(/[^"]*)"\s*,\s*\w+\s*,\s*(BODY_\w+)')
_OLD_OP_NAMED = re.compile(r'\{\s*"(' + "|".join(METHODS) + r')"\s*,\s*(OP_\w+)\s*\}')


def parse_route_bodies(text):
    """{(METHOD, pattern): "none" | "json" | "raw" | "body"}: what the route
    table lets each route's request carry. The one-table layout says it per
    entry (BODY_NONE, BODY_...JSON..., another BODY_ is raw bytes); the old
    layout only whether it has one (route_has_body's list: "body")."""
    text = strip_c_comments(text)
    policies = {}
    for m, p, body in _NEW_BODY.findall(text):
        policies[(m, p)] = "none" if body == "BODY_NONE" else "json" if "JSON" in body else "raw"
    if policies:
        return policies
    has = re.search(r"route_has_body\s*\([^)]*\)\s*\{(.*?)\n\}", text, re.S)
    with_body = set(re.findall(r"OP_\w+", has.group(1))) if has else set()
    starts = [(m.start(), m.group(1)) for m in _OLD_PATTERN.finditer(text)]
    for i, (pos, pattern) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
        for method, op in _OLD_OP_NAMED.findall(text[pos:end]):
            policies[(method, pattern)] = "body" if op in with_body else "none"
    return policies if with_body else {}


# ---- C-like call arguments (shared with sdk_calls.py) ----

def call_args(text, i):
    """The top-level comma-separated arguments of the call whose '(' is at
    text[i]; (args, index after ')')."""
    depth, args, cur, j = 0, [], "", i + 1
    quote = None
    while j < len(text):
        c = text[j]
        if quote:
            cur += c
            if c == "\\":
                cur += text[j + 1]
                j += 2
                continue
            if c == quote:
                quote = None
        elif c in "'\"`":
            quote = c
            cur += c
        elif c in "([{":
            depth += 1
            cur += c
        elif c in ")]}":
            if depth == 0:
                args.append(cur.strip())
                return [a for a in args if a], j + 1
            depth -= 1
            cur += c
        elif c == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
        else:
            cur += c
        j += 1
    raise ValueError("unbalanced call")


def literal(expr):
    m = re.match(r"""^(['"])(.*)\1$""", expr.strip(), re.S)
    return m.group(2) if m else None





def split_top(expr, sep):
    parts, depth, cur, quote = [], 0, "", None
    for c in expr:
        if quote:
            cur += c
            if c == quote:
                quote = None
            continue
        if c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == sep and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += c
    parts.append(cur)
    return [p.strip() for p in parts]


# ---- the CLI's request bodies ----

def c_functions(text):
    """{name: (first line, body text)} of a C file's top-level functions."""
    out = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        ln = lines[i]
        m = re.match(r"^(?:static\s+)?[A-Za-z_][\w\s\*]*?\b(\w+)\s*\(", ln)
        if m and not ln.rstrip().endswith(";") and not ln.startswith(("#", " ", "\t", "{", "}")):
            j = i
            while j < len(lines) and lines[j] != "{" and not lines[j].rstrip().endswith("{"):
                if lines[j].rstrip().endswith(";"):
                    break
                j += 1
            if j < len(lines) and (lines[j] == "{" or lines[j].rstrip().endswith("{")):
                k = j + 1
                while k < len(lines) and lines[k] != "}":
                    k += 1
                out[m.group(1)] = (i + 1, "\n".join(lines[j:k]))
                i = k
        i += 1
    return out


_SET = re.compile(r"json_object_set(?:_new)?\(")
_HELPER = re.compile(r'cli_body_(?:uint|str|sub)\(\s*[^,]+,\s*"(\w+)"')
_PACK = re.compile(r"json_pack\(")


def _pack_keys(fmt, args):
    """The literal keys of a json_pack format's objects ("{s:i,s:{s:s}}")."""
    keys, ai, stack = [], 0, []
    for t in re.findall(r"[{}\[\]]|[sbifIoOn][#%?*]?", fmt):
        if t in ("{", "["):
            stack.append("key" if t == "{" else "arr")
            continue
        if t in ("}", "]"):
            stack.pop()
            if stack and stack[-1] == "val":
                stack[-1] = "key"
            continue
        if stack and stack[-1] == "key":
            lit = literal(args[ai]) if ai < len(args) else None
            if lit is not None:
                keys.append(lit)
            ai += 1
            stack[-1] = "val"
            continue
        ai += 0 if t[0] == "n" else 2 if t[1:2] in ("#", "%") else 1
        if stack and stack[-1] == "val":
            stack[-1] = "key"
    return keys


def body_fields(body):
    """The JSON field names a C function's body sets, literal keys only."""
    body = strip_c_comments(body)
    fields = set(_HELPER.findall(body))
    for m in _SET.finditer(body):
        args, _ = call_args(body, m.end() - 1)
        if len(args) >= 2:
            fields |= set(re.findall(r'"(\w+)"', args[1]))
    for m in _PACK.finditer(body):
        args, _ = call_args(body, m.end() - 1)
        fmt = literal(args[0]) if args else None
        if fmt and fmt.lstrip().startswith("{"):
            fields |= set(_pack_keys(fmt, args[1:]))
    return fields


_CLI_PATH = re.compile(r'"(/v1/[^"?]*|/metrics)')


def cli_paths(top):
    """(shape, where) of every request path the kiln CLI writes as a literal
    or a format ("/v1/sandboxes/%s/exec%s": a conversion that is a whole
    segment is an id, one glued to a segment's end is a query suffix). A path
    whose resource is itself a conversion ("/v1/sandboxes/%s/%s") is left out."""
    out = []
    for f in sorted(glob.glob(os.path.join(top, "api/kiln/*.c"))):
        with open(f, encoding="utf-8") as fh:
            text = strip_c_comments(fh.read())
        for m in _CLI_PATH.finditer(text):
            segs = m.group(1).split("/")
            shaped = []
            for seg in segs:
                if re.fullmatch(r"%[-0-9.]*[lz]*[sdux]", seg):
                    shaped.append("{}")
                else:
                    shaped.append(re.sub(r"%[-0-9.]*[lz]*[sdux].*$", "", seg))
            if shaped[-1] == "" and len(shaped) > 2:
                shaped.pop()  # "/v1/sandboxes/%s%s": the suffix is the caller's
            if len(shaped) > 4 and shaped[-1] == "{}" and shaped[-2] == "{}":
                continue
            line = text.count("\n", 0, m.start()) + 1
            out.append(("/".join(shaped), f"{os.path.relpath(f, top)}:{line}"))
    return out


# ---- endpoint files ----

def handler_files(top):
    """Endpoint sources that define a request handler: a function of the
    route table's handler type, void NAME(struct http_req *r), not static
    (the table names it); relative to top. Helpers taking more are not."""
    out = []
    for f in sorted(glob.glob(os.path.join(top, "api/kilnd/endpoints/**/*.c"), recursive=True)):
        with open(f, encoding="utf-8") as fh:
            if re.search(r"^void\s+\w+\s*\(\s*struct http_req\s*\*\s*\w*\s*\)", fh.read(), re.M):
                out.append(os.path.relpath(f, top))
    return out


def find_one(top, rel, name):
    """rel when it exists, else the one file called name under api/ (a
    file the tree's reorganisation moved)."""
    if os.path.exists(os.path.join(top, rel)):
        return rel
    hits = sorted(glob.glob(os.path.join(top, "api", "**", name), recursive=True))
    return os.path.relpath(hits[0], top) if len(hits) == 1 else rel
