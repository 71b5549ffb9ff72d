"""The spec against a real build/kilnd, no guest (tests/unit/api_spec_test
runs it): nothing here boots a sandbox."""
import json
import os
import re
import sys
import tempfile
import unittest

import schema as S
from schema import load_spec, spec_ops

TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
sys.path.insert(0, os.path.join(TOP, "bench", "lib"))
from kilnd_bench import Kilnd, UnixHTTP  # noqa: E402 (the benches' kilnd and client)


# A request for each operation that a kilnd with no sandbox, template or
# image import answers without booting anything: the path's ids name
# nothing (an image and a template "nope", a sandbox that never existed),
# required query parameters are given, a JSON body is one its schema takes.
LIVE_IDS = {"id": "0123456789ab", "name": "nope", "proc": "1", "port": "8080", "cp": "cp1", "n": "0"}
LIVE_REQUESTS = {
    ("GET", "/v1/images/{id}"): ("/v1/images/nope", None),
    ("DELETE", "/v1/images/{id}"): ("/v1/images/minimal", None),       # a --image image: read_only
    ("POST", "/v1/images"): ("/v1/images?name=minimal", b"x"),         # the name is taken: exists
    ("GET", "/v1/templates/{id}"): ("/v1/templates/nope", None),
    ("DELETE", "/v1/templates/{id}"): ("/v1/templates/nope", None),
    ("POST", "/v1/templates"): ("/v1/templates", b"x"),                # no name: missing_field
    ("POST", "/v1/sandboxes"): ("/v1/sandboxes", b'{"image":"nope"}'),
}
LIVE_BODIES = {
    "/exec": b'{"argv":["true"]}', "/run": b'{"language":"bash","code":"true"}',
    "/checkpoints": b'{"name":"cp1"}', "/ports": b'{"guest_port":8080}', "/previews": b'{"port":8080}',
    "/processes": b'{"argv":["true"]}', "/signal": b'{"signal":"TERM"}', "/resize": b'{"rows":1,"cols":1}',
    "/mkdir": b'{"path":"/x"}', "/remove": b'{"path":"/x"}', "/rename": b'{"from":"/x","to":"/y"}',
    "/firewall": b"{}", "/files": b"x", "/archive": b"x", "/stdin": b"x",
}


class LiveKilnd(unittest.TestCase):
    """The spec against a real build/kilnd (no guest: nothing here boots).
    Its daemon answers validate against their schemas; every operation's
    error answer is one the spec lists for it; a method a path lacks gets
    405 with the spec's methods in Allow (and HEAD and OPTIONS, which the
    server gives every path with GET and every path)."""
    top = TOP

    @classmethod
    def setUpClass(cls):
        cls.spec = load_spec(cls.top)
        kilnd = os.environ.get("KILND", os.path.join(cls.top, "build", "kilnd"))
        cls.kd = None
        cls.missing = None if os.access(kilnd, os.X_OK) else f"{kilnd}: not built (make build/kilnd)"
        if cls.missing:
            return
        cls.files = tempfile.TemporaryDirectory(prefix="api_spec.")
        kernel, image = (os.path.join(cls.files.name, f) for f in ("vmlinux", "minimal.ext4"))
        for f in (kernel, image):
            open(f, "a").close()
        # nothing here boots: no kiln-vmm is needed
        cls.kd = Kilnd("--no-jail", kilnd=kilnd, vmm="/bin/false", kernel=kernel, image=image).__enter__()
        cls.sock = cls.kd.sock

    @classmethod
    def tearDownClass(cls):
        if cls.kd:
            cls.kd.__exit__(None, None, None)
            cls.files.cleanup()

    def setUp(self):
        if self.missing:
            self.fail(self.missing)
        if self.kd.proc.poll() is not None:
            with open(self.kd.log.name) as f:
                self.fail(f"kilnd exited {self.kd.proc.returncode}: {f.read()[-500:]}")

    def request(self, method, target, body=None):
        c = UnixHTTP(self.sock)
        headers = {"Content-Length": str(len(body))} if body is not None else {}
        c.request(method, target, body=body, headers=headers)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, r.getheader("Content-Type") or "", r.getheader("Allow"), data

    def test_daemon_answers_validate(self):
        bad = []
        for target, path in (("/v1/health", "/v1/health"), ("/v1/images", "/v1/images"),
                             ("/v1/images/minimal", "/v1/images/{id}"), ("/v1/templates", "/v1/templates"),
                             ("/v1/sandboxes", "/v1/sandboxes"), ("/v1/sandboxes?state=running", "/v1/sandboxes")):
            status, ctype, _, data = self.request("GET", target)
            st, sch = S.success_schema(self.spec, path, "get")
            if str(status) != st or not ctype.startswith("application/json"):
                bad.append(f"GET {target}: {status} {ctype}, the spec says {st} application/json")
                continue
            bad += [f"GET {target}: {e}" for e in S.validate(self.spec, sch, json.loads(data))]
        status, ctype, _, data = self.request("GET", "/metrics")
        if status != 200 or not ctype.startswith("text/plain"):
            bad.append(f"GET /metrics: {status} {ctype}")
        if bad:
            self.fail("\n" + "\n".join(bad))

    def test_error_answers_are_listed(self):
        codes = self.spec["components"]["schemas"]["ErrorCode"]["x-kiln-status"]
        bad, seen = [], 0
        for method, path in sorted(spec_ops(self.spec)):
            if (method, path) in LIVE_REQUESTS:
                target, body = LIVE_REQUESTS[(method, path)]
            else:
                target = re.sub(r"\{(\w+)\}", lambda m: LIVE_IDS[m.group(1)], path)
                params = S.parameters(self.spec, path, method.lower())
                if ("query", "path") in params:
                    target += "?path=/x"
                body = next((b for sfx, b in LIVE_BODIES.items() if path.endswith(sfx)), None)
                if method != "POST" and method != "PUT":
                    body = None
            if path in ("/v1/health", "/metrics") or (method == "GET" and "{" not in path):
                continue
            status, ctype, _, data = self.request(method, target, body)
            where = f"{method} {target}"
            if status < 400:
                bad.append(f"{where}: answered {status}, an error was expected")
                continue
            seen += 1
            try:
                doc = json.loads(data)
            except ValueError:
                bad.append(f"{where}: {status} with a body that is not JSON")
                continue
            errs = S.validate(self.spec, {"$ref": "#/components/schemas/Error"}, doc)
            if errs:
                bad.append(f"{where}: {errs}")
                continue
            code = doc["error"]["code"]
            if codes.get(code) != status:
                bad.append(f"{where}: {status} {code}, whose status is {codes.get(code)}")
            listed = S.responses(self.spec, path, method.lower()).get(str(status))
            raw = self.spec["paths"][path][method.lower()]["responses"].get(str(status), {})
            if listed is None:
                bad.append(f"{where}: answered {status} {code}; docs/openapi.yaml lists no {status} for it")
            elif not re.search(r"\b" + code + r"\b", raw.get("description", "")):
                bad.append(f"{where}: answered {status} {code}; its {status} in docs/openapi.yaml does not name {code}")
        self.assertGreater(seen, 40)
        if bad:
            self.fail("\n" + "\n".join(bad))

    def test_unknown_query_and_unwanted_body(self):
        """Every operation refuses a query parameter it lacks (400
        unknown_field), and a body exactly when the spec gives it none (413)."""
        bad = []
        for method, path in sorted(spec_ops(self.spec)):
            target = re.sub(r"\{(\w+)\}", lambda m: LIVE_IDS[m.group(1)], path)
            status, _, _, data = self.request(method, target + "?bogus=1")
            if (status, json.loads(data)["error"]["code"]) != (400, "unknown_field"):
                bad.append(f"{method} {path}?bogus=1: {status} {data[:80]!r}, not 400 unknown_field")
            status, _, _, data = self.request(method, target, b"{}")
            takes = bool(S.request_content(self.spec, path, method.lower()))
            if takes == (status == 413):
                bad.append(f"{method} {path} with a body: {status}; the spec "
                           + ("gives it a body" if takes else "gives it none"))
        if bad:
            self.fail("\n" + "\n".join(bad))

    def test_allow_is_the_spec_methods(self):
        bad = []
        for path, item in sorted(self.spec["paths"].items()):
            target = re.sub(r"\{(\w+)\}", lambda m: LIVE_IDS[m.group(1)], path)
            status, _, allow, data = self.request("PATCH", target)
            # HTTP gives every resource OPTIONS, and HEAD wherever GET is
            # (docs/api.md, "Connections"): the server adds them, not the spec.
            want = {m.upper() for m in S.METHODS if m in item} | {"OPTIONS"}
            want = sorted(want | ({"HEAD"} if "get" in item else set()))
            got = sorted(a.strip() for a in (allow or "").split(",") if a.strip())
            if status != 405 or got != want:
                bad.append(f"PATCH {path}: {status}, Allow {got}; the spec has {want}")
        status, _, _, data = self.request("GET", "/v1/nothing")
        if status != 404 or json.loads(data)["error"]["code"] != "route_not_found":
            bad.append(f"GET /v1/nothing: {status} {data[:80]!r}, not 404 route_not_found")
        if bad:
            self.fail("\n" + "\n".join(bad))
