"""A reader for the YAML subset docs/openapi.yaml is written in.

Why not PyYAML: the spec tests run under `make unit` on a bare Debian
with stdlib Python only (the tests add no dependency), and the spec is
hand-written, so it can keep to a subset small enough to read exactly:

  * block mappings (`key: value`, `key:` then a deeper block) and block
    sequences (`- item`, `- key: value` opening a mapping);
  * flow collections `[a, b]` and `{k: v}`, nested, possibly over several
    lines until their brackets close;
  * plain scalars (null, true, false, integers, floats, else strings),
    'single' and "double" (JSON escapes) quoted scalars;
  * `>` (folded) and `|` (literal) block scalars, with `-` to strip;
  * whole-line `#` comments.

Anything else (anchors, aliases, tags, inline comments, `: ` inside a
plain scalar, tabs, duplicate keys) is refused with the line number, so
a construct that real YAML would read another way never passes here
silently.
"""
import json
import re


class YamlError(ValueError):
    pass


_INT = re.compile(r"^[-+]?[0-9]+$")
_FLOAT = re.compile(r"^[-+]?([0-9]+\.[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$")


def _plain(text, lineno):
    if text == "" or text in ("null", "~"):
        return None
    if text[0] in "&*!|>%@`":
        raise YamlError(f"line {lineno}: '{text[0]}' (anchors, aliases, tags, ...) is outside the subset")
    if text == "true":
        return True
    if text == "false":
        return False
    if _INT.match(text):
        return int(text)
    if _FLOAT.match(text):
        return float(text)
    if ": " in text or text.endswith(":") or " #" in text:
        raise YamlError(f"line {lineno}: plain scalar {text!r} holds ': ' or ' #': quote it")
    return text


def _quoted(s, i, lineno):
    """The quoted scalar starting at s[i]; (value, index after it)."""
    q = s[i]
    if q == '"':
        j = i + 1
        while j < len(s):
            if s[j] == "\\":
                j += 2
                continue
            if s[j] == '"':
                return json.loads(s[i:j + 1]), j + 1
            j += 1
    else:
        j = i + 1
        out = []
        while j < len(s):
            if s[j] == "'":
                if j + 1 < len(s) and s[j + 1] == "'":
                    out.append("'")
                    j += 2
                    continue
                return "".join(out), j + 1
            out.append(s[j])
            j += 1
    raise YamlError(f"line {lineno}: unterminated quoted scalar")


class _Flow:
    """Recursive descent over one flow collection's text."""

    def __init__(self, text, lineno):
        self.s, self.i, self.lineno = text, 0, lineno

    def err(self, what):
        raise YamlError(f"line {self.lineno}: flow collection: {what} at {self.s[self.i:self.i + 20]!r}")

    def ws(self):
        while self.i < len(self.s) and self.s[self.i] in " \n":
            self.i += 1

    def value(self, key=False):
        self.ws()
        c = self.s[self.i:self.i + 1]
        if c == "[":
            return self.seq()
        if c == "{":
            return self.map()
        if c in ("'", '"'):
            v, self.i = _quoted(self.s, self.i, self.lineno)
            return v
        start = self.i
        while self.i < len(self.s):
            ch = self.s[self.i]
            if ch in ",]}":
                break
            if key and ch == ":" and self.s[self.i + 1:self.i + 2] in (" ", ""):
                break
            self.i += 1
        return _plain(self.s[start:self.i].strip(), self.lineno)

    def items(self, close, item):
        """item() for each entry up to the close bracket, ','-separated."""
        self.i += 1
        self.ws()
        if self.s[self.i:self.i + 1] == close:
            self.i += 1
            return
        while True:
            item()
            self.ws()
            c = self.s[self.i:self.i + 1]
            self.i += 1
            if c == close:
                return
            if c != ",":
                self.err(f"',' or '{close}' expected")

    def seq(self):
        out = []
        self.items("]", lambda: out.append(self.value()))
        return out

    def map(self):
        out = {}

        def entry():
            k = self.value(key=True)
            self.ws()
            if self.s[self.i:self.i + 1] != ":":
                self.err(f"key {k!r} without ': value'")
            self.i += 1
            if k in out:
                self.err(f"duplicate key {k!r}")
            out[k] = self.value()

        self.items("}", entry)
        return out


def _balanced(text):
    depth, i = 0, 0
    while i < len(text):
        c = text[i]
        if c in "'\"" and (i == 0 or text[i - 1] in " [{,:"):
            _, i = _quoted(text, i, 0)
            continue
        if c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
        i += 1
    return depth == 0


class _Reader:
    def __init__(self, text):
        self.lines = []  # (lineno, indent, content); blank lines kept for block scalars
        for n, raw in enumerate(text.split("\n"), 1):
            if "\t" in raw[:len(raw) - len(raw.lstrip())]:
                raise YamlError(f"line {n}: a tab in the indentation")
            body = raw.rstrip()
            stripped = body.lstrip(" ")
            if stripped.startswith("#"):
                continue
            self.lines.append((n, len(body) - len(stripped), stripped))
        self.pos = 0

    def peek(self):
        while self.pos < len(self.lines) and self.lines[self.pos][2] == "":
            self.pos += 1
        return self.lines[self.pos] if self.pos < len(self.lines) else None

    def block(self, indent):
        line = self.peek()
        if line is None or line[1] < indent:
            return None
        if line[2] == "-" or line[2].startswith("- "):
            return self.seq(line[1])
        if line[2][0] in "[{":
            self.pos += 1
            return self.inline(line[2], line[0], line[1] - 1)
        return self.map(line[1])

    def entries(self, indent):
        """Each (lineno, indent, content) of the block at indent, in turn,
        until the block ends; a deeper line where an entry belongs is an error."""
        while True:
            line = self.peek()
            if line is None or line[1] < indent:
                return
            if line[1] > indent:
                raise YamlError(f"line {line[0]}: unexpected indentation")
            yield line

    def seq(self, indent):
        out = []
        for n, ind, content in self.entries(indent):
            if not (content == "-" or content.startswith("- ")):
                raise YamlError(f"line {n}: a sequence item ('- ') expected")
            rest = content[1:].lstrip(" ")
            if rest == "":
                self.pos += 1
                out.append(self.block(indent + 1))
            elif self._is_key(rest):
                # "- key: value" opens a mapping whose keys sit where key does
                self.lines[self.pos] = (n, ind + len(content) - len(rest), rest)
                out.append(self.map(ind + len(content) - len(rest)))
            else:
                self.pos += 1
                out.append(self.inline(rest, n, indent))
        return out

    @staticmethod
    def _is_key(text):
        if text[0] in "[{":
            return False
        if text[0] in "'\"":
            try:
                _, j = _quoted(text, 0, 0)
            except YamlError:
                return False
            return text[j:j + 1] == ":"
        m = re.match(r"^[^\s:][^:]*?:( |$)", text)
        return m is not None

    def split_key(self, content, n):
        if content[0] in "'\"":
            key, j = _quoted(content, 0, n)
        else:
            m = re.match(r"^([^\s:][^:]*?):( |$)", content)
            if not m:
                raise YamlError(f"line {n}: 'key: value' expected, got {content!r}")
            key, j = _plain(m.group(1), n), len(m.group(1))
        if content[j:j + 1] != ":":
            raise YamlError(f"line {n}: ':' expected after key {key!r}")
        return key, content[j + 1:].strip()

    def map(self, indent):
        out = {}
        for n, ind, content in self.entries(indent):
            if content.startswith("- "):
                raise YamlError(f"line {n}: a sequence where a mapping key was expected")
            key, rest = self.split_key(content, n)
            if key in out:
                raise YamlError(f"line {n}: duplicate key {key!r}")
            self.pos += 1
            if rest == "":
                out[key] = self.block(indent + 1)
            else:
                out[key] = self.inline(rest, n, indent)
        return out

    def inline(self, rest, n, indent):
        if rest[0] in "[{":
            text = rest
            while not _balanced(text):
                if self.pos >= len(self.lines):
                    raise YamlError(f"line {n}: flow collection never closes")
                text += "\n" + self.lines[self.pos][2]
                self.pos += 1
            f = _Flow(text, n)
            v = f.value()
            f.ws()
            if f.i != len(text):
                f.err("text after the collection")
            return v
        if rest[0] in "'\"":
            v, j = _quoted(rest, 0, n)
            if rest[j:].strip():
                raise YamlError(f"line {n}: text after a quoted scalar")
            return v
        if rest[0] in "|>":
            return self.block_scalar(rest, n, indent)
        return _plain(rest, n)

    def block_scalar(self, head, n, indent):
        if head not in (">", ">-", "|", "|-"):
            raise YamlError(f"line {n}: block scalar header {head!r} is outside the subset")
        body = []
        while self.pos < len(self.lines):
            ln, ind, content = self.lines[self.pos]
            if content and ind <= indent:
                break
            body.append((ind, content))
            self.pos += 1
        while body and body[-1][1] == "":
            body.pop()
        if not body:
            return ""
        base = min(ind for ind, c in body if c)
        texts = [(" " * (ind - base) + c) if c else "" for ind, c in body]
        if head[0] == "|":
            s = "\n".join(texts)
        else:
            s, prev_blank = "", True
            for t in texts:
                if t == "":
                    s += "\n"
                    prev_blank = True
                else:
                    s += ("" if prev_blank else " ") + t
                    prev_blank = False
        return s if head.endswith("-") else s + "\n"


def loads(text):
    r = _Reader(text)
    v = r.block(0)
    left = r.peek()
    if left is not None:
        raise YamlError(f"line {left[0]}: text outside the document's top-level block")
    return v


def load(path):
    with open(path, encoding="utf-8") as f:
        return loads(f.read())
