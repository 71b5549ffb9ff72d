"""What the tree says about the API, read from its sources by regex: the
route table, docs/api.md's examples, the SDKs' calls, the CLI's request
bodies and the endpoint files. Each reader returns plain data; the
checks are in tests/unit/api_spec_test.

Paths are compared by shape: every {param} is "{}", so docs and SDKs may
name parameters as they like while the spec names them as the route
table does.
"""
import glob
import json
import os
import re
import shlex

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


# ---- docs/api.md ----

class DocBlock:
    def __init__(self, lang, lines, line, heading, annotation):
        self.lang = lang            # "json", "sh", "" ...
        self.lines = lines          # the block's lines
        self.line = line            # line number of its first line
        self.heading = heading      # the nearest heading above it
        self.annotation = annotation  # "<!-- schema: NAME -->" above it, or None


_HEADING = re.compile(r"^#{1,6}\s+(.*)$")
_ANNOT = re.compile(r"^<!--\s*schema:\s*([^>]*?)\s*-->\s*$")


def doc_blocks(text):
    """Every fenced block with the heading above it and the annotation
    (<!-- schema: NAME -->) that precedes it across blank lines only."""
    blocks, heading, pending = [], "", None
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        ln = lines[i]
        s = ln.strip()
        m = _HEADING.match(ln)
        am = _ANNOT.match(s)
        if m:
            heading, pending = m.group(1), None
        elif am:
            pending = am.group(1)
        elif s.startswith("```"):
            lang = s[3:].strip()
            indent = len(ln) - len(ln.lstrip())
            start, body = i + 1, []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
                i += 1
            blocks.append(DocBlock(lang, body, start + 1, heading, pending))
            pending = None
        elif s:
            pending = None
        i += 1
    return blocks


class DocTable:
    def __init__(self, kind, names, line, heading, annotation):
        self.kind = kind        # "request" (field type req ...), "response" (field | |), "query"
        self.names = names      # [(name, line)]: the backticked names of the first column
        self.line, self.heading = line, heading
        self.annotation = annotation  # "<!-- schema: NAME -->" right above it, or None


def doc_tables(text):
    """docs/api.md's field and query tables, by the shape of their head."""
    tables, heading, lines, pending = [], "", text.split("\n"), None
    i = 0
    while i < len(lines):
        m = _HEADING.match(lines[i])
        am = _ANNOT.match(lines[i].strip())
        if m:
            heading, pending = m.group(1), None
        elif am:
            pending = am.group(1)
        elif lines[i].strip() and not lines[i].startswith("|"):
            pending = None
        head = [c.strip() for c in lines[i].strip().strip("|").split("|")] if lines[i].startswith("|") else []
        kind = None
        if head[:3] == ["field", "type", "req"]:
            kind = "request"
        elif head[:2] == ["field", ""] and len(head) == 2:
            kind = "response"
        elif head[:1] == ["query"]:
            kind = "query"
        if kind and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            start, names, j = i + 1, [], i + 2
            while j < len(lines) and lines[j].startswith("|"):
                first = lines[j].strip().strip("|").split("|")[0]
                names += [(n, j + 1) for n in re.findall(r"`([a-z_][a-z0-9_]*)`", first)]
                j += 1
            tables.append(DocTable(kind, names, start, heading, pending))
            pending = None
            i = j
            continue
        i += 1
    return tables


def heading_operations(text):
    """(METHOD, path, line) of every operation a heading names ("#### GET
    /v1/templates, GET /v1/templates/{name}" names two)."""
    out = []
    for n, ln in enumerate(text.split("\n"), 1):
        m = _HEADING.match(ln)
        if m:
            out += [(mm.group(1), mm.group(2), n)
                    for mm in re.finditer(r"\b(" + "|".join(METHODS) + r") (/[^\s,?]*)", m.group(1))]
    return out


def heading_operation(heading):
    """("POST", "/v1/sandboxes/{id}/exec") of "POST /v1/sandboxes/{id}/exec"
    (the first when a heading names several), else None."""
    m = re.match(r"^(" + "|".join(METHODS) + r")\s+(/\S*?)(?:\?\S*)?(?:,|$)", heading)
    return (m.group(1), m.group(2)) if m else None


_ELL = r"(?:\.\.\.|\u2026)"


def deabridge(text):
    """docs' abridged JSON as JSON text ("[...]" and "{...note...}" empty,
    ", ..." and "..., " dropped; "..." and "\u2026" inside strings stay),
    or None when it was not abridged."""
    t = re.sub(r"\[\s*" + _ELL + r"[^\"{}\[\]]*\]", "[]", text)
    t = re.sub(r"\{\s*" + _ELL + r"[^\"{}\[\]]*\}", "{}", t)
    t = re.sub(r",\s*" + _ELL + r"\s*(?=[,}\]])", "", t)
    t = re.sub(r"(?<=[{\[])\s*" + _ELL + r"\s*,", "", t)
    return None if t == text else t


def parse_example_json(text):
    """(value, abridged) of an example's JSON; raises ValueError."""
    try:
        return json.loads(text), False
    except ValueError:
        pass
    t = deabridge(text)
    if t is None:
        raise ValueError("not JSON")
    return json.loads(t), True


class Curl:
    def __init__(self, method, path, query, body, raw_body, line, response=None):
        self.method, self.path, self.query = method, path, query
        self.body, self.raw_body, self.line = body, raw_body, line
        self.responses = response or []  # [(status or None, json text)] from "# -> ..." lines


_ARG_OPTS = {"-X", "--request", "-d", "--data", "--data-binary", "--data-raw", "-T", "--upload-file", "-o",
             "-H", "--header", "-c", "-b", "--unix-socket", "-w", "-m", "--max-time"}


def shell_commands(block):
    """(line, text) of each command of a sh block, continuations joined;
    the "# -> ..." comment lines after a command are kept with it."""
    cmds, cur, start = [], "", 0
    for n, ln in enumerate(block.lines):
        if cur:
            cur += " " + ln.strip()
        else:
            cur, start = ln.strip(), block.line + n
        if cur.endswith("\\"):
            cur = cur[:-1]
            continue
        cmds.append((start, cur))
        cur = ""
    return cmds


def parse_curls(block):
    out = []
    for line, cmd in shell_commands(block):
        arrow = re.match(r"^#\s*(->)?\s*(.*)$", cmd)
        if arrow:
            if not out or not (arrow.group(1) or out[-1].responses):
                continue
            last = out[-1].responses
            if not arrow.group(1) and last and last[-1].count("{") > last[-1].count("}"):
                last[-1] += " " + arrow.group(2)  # an answer over several comment lines
            else:
                last.append(arrow.group(2))
            continue
        if "--unix-socket" not in cmd:
            continue
        try:
            words = shlex.split(cmd, comments=True)
        except ValueError:
            continue
        for piece in _split_pipeline(words):
            c = _curl(piece, line)
            if c:
                out.append(c)
    return out


def _split_pipeline(words):
    cur = []
    for w in words:
        if w in ("|", "&&", ";", "||"):
            yield cur
            cur = []
        else:
            cur.append(w)
    yield cur


def _curl(words, line):
    if "curl" not in words or "--unix-socket" not in words:
        return None
    words = words[words.index("curl") + 1:]
    method, url, data, upload = None, None, None, False
    i = 0
    while i < len(words):
        w = words[i]
        if w in _ARG_OPTS:
            v = words[i + 1] if i + 1 < len(words) else ""
            if w in ("-X", "--request"):
                method = v
            elif w in ("-d", "--data", "--data-binary", "--data-raw"):
                data = v
            elif w in ("-T", "--upload-file"):
                upload = True
            i += 2
            continue
        if w.startswith("http://kiln"):
            url = w
        i += 1
    if url is None:
        return None
    method = method or ("PUT" if upload else "POST" if data is not None else "GET")
    rest = url[len("http://kiln"):]
    path, _, q = rest.partition("?")
    query = [tuple(kv.split("=", 1)) if "=" in kv else (kv, "") for kv in q.split("&") if kv]
    body, raw = None, False
    if data is not None:
        if data.startswith("@"):
            raw = True
        else:
            body = data
    return Curl(method, path, query, body, raw or upload, line)


_RAW_REQUEST = re.compile(r"\b(" + "|".join(METHODS) + r") (/[^\s?]*)(?:\?\S*)? HTTP/1\.[01]")


def raw_requests(block):
    """(method, path, line) of raw HTTP request lines (python, printf)."""
    for n, ln in enumerate(block.lines):
        for m in _RAW_REQUEST.finditer(ln):
            yield m.group(1), m.group(2), block.line + n


# ---- SDK calls ----

def _args(text, i):
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


def _literal(expr):
    m = re.match(r"""^(['"])(.*)\1$""", expr.strip(), re.S)
    return m.group(2) if m else None


class _Source:
    """One SDK file: its classes (by offset) and method definitions."""

    def __init__(self, text, lang):
        self.text, self.lang = text, lang
        if lang == "py":
            self.classes = [(m.start(), m.group(1)) for m in re.finditer(r"^class (\w+)", text, re.M)]
        else:
            self.classes = [(m.start(), m.group(1)) for m in re.finditer(r"^(?:export )?class (\w+)", text, re.M)]

    def class_at(self, pos):
        name = None
        for start, n in self.classes:
            if start <= pos:
                name = n
        return name

    def defining_function(self, pos, name):
        """The nearest function above pos (in its class) with a parameter
        called name: a nested helper's free variable is its outer
        function's parameter."""
        if self.lang == "py":
            pat = r"^\s*(?:async )?def (\w+)\(([^)]*)\)"
        else:
            pat = r"^\s*(?:async )?(\w+)\(([^)]*)\)\s*\{"
        floor = max([start for start, _ in self.classes if start <= pos], default=0)
        for m in reversed(list(re.finditer(pat, self.text[floor:pos], re.M))):
            params = [p.split(":")[0].split("=")[0].strip().lstrip("*") for p in m.group(2).split(",")]
            if name in params:
                return m.group(1)
        return None

    def literal_args(self, func):
        """The literal first arguments of calls to method func."""
        me = "self" if self.lang == "py" else "this"
        return set(re.findall(me + r"\." + func + r"\(\s*['\"]([\w/-]+)['\"]", self.text))


def literal_keys(expr):
    """The keys of a dict or object literal ({"a": x, b, c: y, ...rest}),
    through a drop_none(...) wrapper; None when expr is no literal."""
    expr = expr.strip()
    m = re.match(r"^drop_none\((.*)\)$", expr, re.S)
    if m:
        expr = m.group(1).strip()
    if not (expr.startswith("{") and expr.endswith("}")):
        return None
    keys = set()
    for piece in _split_top(expr[1:-1], ","):
        if not piece or piece.startswith("..") or piece.startswith("**"):
            continue
        k = re.match(r"""^["']?(\w+)["']?\s*:""", piece)
        if k:
            keys.add(k.group(1))
        elif re.match(r"^\w+$", piece):
            keys.add(piece)  # JS shorthand {path}
    return keys


def _named_args(args, lang):
    """{"query": expr, "json": expr} of a transport call's arguments."""
    out = {}
    if lang == "py":
        for a in args[2:]:
            m = re.match(r"^(query|json)\s*=\s*(.*)$", a, re.S)
            if m:
                out[m.group(1)] = m.group(2)
    elif len(args) > 2 and args[2].startswith("{"):
        for piece in _split_top(args[2][1:-1], ","):
            m = re.match(r"^(query|json)\s*:\s*(.*)$", piece, re.S)
            if m:
                out[m.group(1)] = m.group(2)
    return out


def _concat(parts):
    return [("".join(p)) for p in _product(parts)]


def _product(parts):
    out = [[]]
    for alts in parts:
        out = [o + [a] for o in out for a in alts]
    return out


class SdkCall:
    """One transport call: method, path (ids as {}), where, and the keys of
    its query and JSON body when they are literals (else None)."""

    def __init__(self, method, path, where, query, body):
        self.method, self.path, self.where, self.query, self.body = method, path, where, query, body


class _Sdk:
    """An SDK's sources and its transport calls (CALL: the call's opening,
    whose arguments are "METHOD", PATH, then options)."""
    CALL = LANG = None

    def __init__(self, files):
        self.sources = {}
        for f in files:
            with open(f, encoding="utf-8") as fh:
                self.sources[f] = _Source(fh.read(), self.LANG)

    def calls(self):
        out = []
        for f, src in self.sources.items():
            for m in self.CALL.finditer(src.text):
                args, _ = _args(src.text, m.end() - 1)
                method = _literal(args[0])
                if method is None:
                    continue
                line = src.text.count("\n", 0, m.start()) + 1
                named = {k: literal_keys(v) for k, v in _named_args(args, self.LANG).items()}
                for path in self.eval(src, args[1], m.start()):
                    out.append(SdkCall(method, path, f"{f}:{line}", named.get("query"), named.get("json")))
        return out

    def parameter_values(self, src, name, pos):
        """The literals a method's parameter is called with (lifecycle("stop")),
        or None."""
        func = src.defining_function(pos, name)
        vals = src.literal_args(func) if func else None
        return sorted(vals) if vals else None


class PySdk(_Sdk):
    """Calls self._t.<call|text|open|open_upload>("METHOD", PATH, ...)."""
    CALL = re.compile(r"\._t\.(call|text|open|open_upload)\(")
    LANG = "py"

    def __init__(self, files):
        super().__init__(files)
        self.p_defs = {}  # class -> the args of its _p's sb_path(...)
        for src in self.sources.values():
            for m in re.finditer(r"def _p\(self, \*rest[^)]*\)[^:]*:\s*return sb_path\(", src.text):
                args, _ = _args(src.text, m.end() - 1)
                self.p_defs[src.class_at(m.start())] = args
            d = re.search(r"def sb_path\([^)]*\)[^:]*:(?:\s*\"\"\".*?\"\"\")?\s*return (.*)", src.text, re.S)
            if d and not d.group(1).startswith('"/v1/sandboxes/" + seg('):
                raise ValueError("sb_path no longer builds /v1/sandboxes/ID/...: update sources.PySdk.sb_path")

    def eval(self, src, expr, pos, rest=None):
        expr = expr.strip()
        lit = _literal(expr)
        if lit is not None:
            return [lit]
        parts = _split_top(expr, "+")
        if len(parts) > 1:
            return _concat([self.eval(src, p, pos, rest) for p in parts])
        m = re.match(r"^(sb_path|self\._p)\(", expr)
        if m:
            args, _ = _args(expr, m.end() - 1)
            if m.group(1) == "self._p":
                cls = src.class_at(pos)
                if cls not in self.p_defs:
                    raise ValueError(f"{cls}._p: no definition found")
                return self.sb_path(src, self.p_defs[cls], pos, rest=args)
            return self.sb_path(src, args, pos, rest)
        if re.match(r"^\w+$", expr):
            return self.parameter_values(src, expr, pos) or ["{}"]
        return ["{}"]

    def sb_path(self, src, args, pos, rest):
        # sb_path(id, *parts): "/v1/sandboxes/" + seg(id) + "/" + seg(part)...
        parts = [["/v1/sandboxes/{}"]]
        for a in args[1:]:
            if a.startswith("*"):
                for r in rest or []:
                    parts.append(["/" + x for x in self.eval(src, r, pos)])
            else:
                parts.append(["/" + x for x in self.eval(src, a, pos, rest)])
        return _concat(parts)


class JsSdk(_Sdk):
    """Calls <transport>.<json|text|open>('METHOD', PATH, ...)."""
    CALL = re.compile(r"(?:\.t|\.transport|\bt\(\)|\bt)\.(json|text|open)\(")
    LANG = "js"

    def __init__(self, files):
        super().__init__(files)
        self.getters = {}  # (class, name) -> expression
        for src in self.sources.values():
            for m in re.finditer(r"get (\w+)\(\)\s*\{\s*return (.+?);\s*\}", src.text):
                self.getters[(src.class_at(m.start()), m.group(1))] = (src, m.group(2), m.start())

    def getter(self, cls, name):
        if (cls, name) not in self.getters:
            raise ValueError(f"{cls}.{name}: no getter found")
        src, expr, pos = self.getters[(cls, name)]
        return self.eval(src, expr, pos)

    def eval(self, src, expr, pos):
        expr = expr.strip()
        lit = _literal(expr)
        if lit is not None and not expr.startswith("`"):
            return [lit]
        if expr.startswith("`") and expr.endswith("`"):
            parts, body, i = [], expr[1:-1], 0
            for m in re.finditer(r"\$\{([^}]*)\}", body):
                parts.append([body[i:m.start()]])
                parts.append(self.eval(src, m.group(1), pos))
                i = m.end()
            parts.append([body[i:]])
            return _concat(parts)
        m = re.match(r"^this\.sb\.(\w+)$", expr)
        if m:
            return self.getter("Sandbox", m.group(1))
        m = re.match(r"^this\.(\w+)$", expr)
        if m and m.group(1) in ("path", "base"):
            return self.getter(src.class_at(pos), m.group(1))
        if re.match(r"^\w+$", expr):
            return self.parameter_values(src, expr, pos) or ["{}"]
        return ["{}"]


def _split_top(expr, sep):
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
            lit = _literal(args[ai]) if ai < len(args) else None
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
        args, _ = _args(body, m.end() - 1)
        if len(args) >= 2:
            fields |= set(re.findall(r'"(\w+)"', args[1]))
    for m in _PACK.finditer(body):
        args, _ = _args(body, m.end() - 1)
        fmt = _literal(args[0]) if args else None
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
