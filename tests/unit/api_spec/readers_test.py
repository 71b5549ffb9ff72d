"""The api_spec readers themselves, on edge and hostile input
(tests/unit/api_spec_test runs them)."""
import unittest

import doc_examples as docs
import schema as S
import sources as src
import yaml_subset


class Readers(unittest.TestCase):
    """The readers themselves, on hostile and edge input."""

    def test_yaml_subset(self):
        y = yaml_subset.loads
        self.assertEqual(y("a: 1\nb:\n  - x\n  - {k: 'v, w', n: [1, 2]}\nc: >\n  one\n  two\n"),
                         {"a": 1, "b": ["x", {"k": "v, w", "n": [1, 2]}], "c": "one two\n"})
        self.assertEqual(y("- a: 1\n  b: 2\n- c\n"), [{"a": 1, "b": 2}, "c"])
        self.assertEqual(y("k: [a,\n   b]\n'200': \"x\\n\"\n"), {"k": ["a", "b"], "200": "x\n"})
        for bad in ("a: 1\na: 2\n", "a: &x 1\n", "a: b: c\n", "a: x #y\n", "a: {b: 1, c}\n", "a: [1,\n",
                    "a:\n\t- 1\n", "a: 'x\n"):
            with self.assertRaises(yaml_subset.YamlError, msg=repr(bad)):
                y(bad)

    def test_validator(self):
        spec = {"components": {"schemas": {"P": {"type": "object", "required": ["a"], "additionalProperties": False,
                                                 "properties": {"a": {"type": "integer", "minimum": 1},
                                                                "b": {"type": ["string", "null"]}}}}}}
        ref = {"$ref": "#/components/schemas/P"}
        self.assertEqual(S.validate(spec, ref, {"a": 1, "b": None}), [])
        self.assertEqual(len(S.validate(spec, ref, {"a": True})), 1)  # a bool is no integer
        self.assertEqual(len(S.validate(spec, ref, {"a": 0, "c": 1})), 2)
        self.assertEqual(S.validate(spec, ref, {"b": "x"}, partial=True), [])
        one = {"oneOf": [{"type": "integer"}, {"type": "number"}]}
        self.assertEqual(len(S.validate(spec, one, 1)), 1)  # both match: not exactly one
        self.assertEqual(S.validate(spec, one, 1.5), [])

    def test_route_table_both_layouts(self):
        old = ('{ "/v1/x/{id}", "GET, DELETE",\n  { { "GET", OP_A }, { "DELETE", OP_B } } },\n'
               '{ "/v1/y", "POST", { { "POST", OP_C } } },')
        self.assertEqual(src.parse_route_table(old),
                         {("GET", "/v1/x/{id}"), ("DELETE", "/v1/x/{id}"), ("POST", "/v1/y")})
        new = '/* { "PUT", "/v1/no", h, BODY_JSON, 1 }, */\n\t{ "GET", "/v1/x/{id}", handle_x, BODY_NONE, 0 },\n'
        self.assertEqual(src.parse_route_table(new), {("GET", "/v1/x/{id}")})

    def test_route_bodies_both_layouts(self):
        old = ('{ "/v1/x", "GET, POST", { { "GET", OP_A }, { "POST", OP_B } } },\n'
               'bool route_has_body(enum route_op op)\n{\n\treturn op == OP_B;\n}\n')
        self.assertEqual(src.parse_route_bodies(old), {("GET", "/v1/x"): "none", ("POST", "/v1/x"): "body"})
        new = ('{ "GET", "/v1/x", h_get, BODY_NONE, 0 },\n{ "POST", "/v1/x", h_post, BODY_JSON, 1 },\n'
               '{ "PUT", "/v1/x/f", h_put, BODY_STREAM, 2 },\n')
        self.assertEqual(src.parse_route_bodies(new), {("GET", "/v1/x"): "none", ("POST", "/v1/x"): "json",
                                                       ("PUT", "/v1/x/f"): "raw"})

    def test_curl_and_abridged_json(self):
        b = docs.DocBlock("sh", ["curl --unix-socket $S -X POST 'http://kiln/v1/a?x=1' \\", "  -d '{\"k\":\"v\"}'",
                                "# -> 201 {\"id\":\"1\", ...}"], 1, "", None)
        c = docs.parse_curls(b)[0]
        self.assertEqual((c.method, c.path, c.query, c.body, c.responses),
                         ("POST", "/v1/a", [("x", "1")], '{"k":"v"}', ['201 {"id":"1", ...}']))
        self.assertEqual(docs.parse_example_json('{"a": [...], "b": {...}, ..., "c": 1}'),
                         ({"a": [], "b": {}, "c": 1}, True))

    def test_cli_field_reader(self):
        body = ('json_object_set_new(b, is_x ? "cidr" : "host", v);\n'
                'r = json_pack("{s:s,s:{s:i}}", "signal", "TERM", "sub", "n", 1);\n'
                'cli_body_uint(b, "rows", "--rows", v);\n')
        self.assertEqual(src.body_fields(body), {"cidr", "host", "signal", "sub", "n", "rows"})
