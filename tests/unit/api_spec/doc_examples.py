"""docs/api.md read for the API spec tests: its fenced blocks (with the
heading above and a <!-- schema: NAME --> annotation), field tables, curl
commands and their "# -> answer" comments, raw HTTP request lines, and
abridged JSON ("...")."""
import json
import re
import shlex

from sources import METHODS

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
