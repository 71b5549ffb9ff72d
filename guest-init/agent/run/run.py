# kiln run: the Python runner (docs/agent-protocol.md, "run"). kiln-init
# writes this file to /run/kiln-run/run.py and runs
#   python3 -u /run/kiln-run/run.py CODE_FILE
# with KILN_RESULT_FILE naming the file the host reads back after the exit.
# The code gets an importable `result` module (also a builtin):
# result.set(value) and result.error(message). An uncaught exception is
# printed to stderr as Python would and recorded as the run's error.
import builtins
import json
import os
import sys
import traceback
import types

_PATH = os.environ.pop("KILN_RESULT_FILE", None)
# The host reads at most 1 MiB of result file: the value gets 960 KiB,
# so an error with its traceback still fits beside it.
VALUE_MAX = 960 << 10
_TEXT_MAX = 32 << 10
_state = {}


def _flush():
    if _PATH is None:
        raise RuntimeError("result: KILN_RESULT_FILE is not set (run this through kiln's run)")
    body = ",".join('"%s":%s' % (k, _state[k]) for k in ("value", "error") if k in _state)
    with open(_PATH, "w", encoding="utf-8") as f:
        f.write("{" + body + "}")


def _clip(s):
    s = str(s)
    return s if len(s) <= _TEXT_MAX else s[:_TEXT_MAX] + "\n[... cut at 32 KiB]"


def set(value):
    """Record VALUE (anything json.dumps takes) as the run's result."""
    try:
        text = json.dumps(value, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as e:
        raise TypeError("result.set: the value is not JSON: %s" % e) from None
    n = len(text.encode("utf-8"))
    if n > VALUE_MAX:
        raise ValueError("result.set: the value is %d bytes of JSON; the limit is %d (960 KiB)" % (n, VALUE_MAX))
    _state["value"] = text
    _flush()


def error(message):
    """Record MESSAGE as the run's error (type ResultError); the code goes on."""
    _state["error"] = json.dumps({"type": "ResultError", "message": _clip(message), "traceback": None},
                                 ensure_ascii=False)
    _flush()


result = types.ModuleType("result", "kiln run: result.set(value), result.error(message)")
result.set = set
result.error = error
result.VALUE_MAX = VALUE_MAX
sys.modules["result"] = result
builtins.result = result


def _type_name(t):
    if t.__module__ in ("builtins", "__main__"):
        return t.__qualname__
    return t.__module__ + "." + t.__qualname__


def _main():
    path = sys.argv[1]
    sys.argv = [path] + sys.argv[2:]
    sys.path[0] = ""  # like python3 -c: the working directory
    glob = {"__name__": "__main__", "__file__": path, "__builtins__": builtins}
    try:
        with open(path, "rb") as f:
            code = compile(f.read(), path, "exec")
        exec(code, glob)
    except SystemExit:
        raise
    except BaseException as e:
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
            tb = tb.tb_next
        text = "".join(traceback.format_exception(type(e), e, tb))
        sys.stderr.write(text)
        sys.stderr.flush()
        _state["error"] = json.dumps({"type": _type_name(type(e)), "message": _clip(e),
                                      "traceback": _clip(text)}, ensure_ascii=False)
        try:
            _flush()
        except OSError:
            pass
        sys.exit(1)


_main()
