"""The Python and JS SDKs' transport calls, read for the API spec tests:
method, path (ids as {}), and the names of literal queries and JSON bodies.
A path is evaluated from the call's expression: literals, concatenation and
template strings, sb_path(), a class's _p() or path/base getter, and a
parameter whose callers pass literals (lifecycle("stop"))."""
import re

from sources import call_args, literal, split_top

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
    for piece in split_top(expr[1:-1], ","):
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
        for piece in split_top(args[2][1:-1], ","):
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
                args, _ = call_args(src.text, m.end() - 1)
                method = literal(args[0])
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
    CALL = re.compile(r"\._t\.(call|text|open|open_upload|upgrade)\(")
    LANG = "py"

    def __init__(self, files):
        super().__init__(files)
        self.p_defs = {}  # class -> the args of its _p's sb_path(...)
        for src in self.sources.values():
            for m in re.finditer(r"def _p\(self, \*rest[^)]*\)[^:]*:\s*return sb_path\(", src.text):
                args, _ = call_args(src.text, m.end() - 1)
                self.p_defs[src.class_at(m.start())] = args
            d = re.search(r"def sb_path\([^)]*\)[^:]*:(?:\s*\"\"\".*?\"\"\")?\s*return (.*)", src.text, re.S)
            if d and not d.group(1).startswith('"/v1/sandboxes/" + seg('):
                raise ValueError("sb_path no longer builds /v1/sandboxes/ID/...: update sources.PySdk.sb_path")

    def eval(self, src, expr, pos, rest=None):
        expr = expr.strip()
        lit = literal(expr)
        if lit is not None:
            return [lit]
        parts = split_top(expr, "+")
        if len(parts) > 1:
            return _concat([self.eval(src, p, pos, rest) for p in parts])
        m = re.match(r"^(sb_path|self\._p)\(", expr)
        if m:
            args, _ = call_args(expr, m.end() - 1)
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
    CALL = re.compile(r"(?:\.t|\.transport|\bt\(\)|\bt)\.(json|text|open|upgrade)\(")
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
        lit = literal(expr)
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
