"""The JSON Schema subset docs/openapi.yaml uses, and the spec's lookups.

Keywords validated: type (one or a list, 'null' included), enum,
properties, required, additionalProperties (false or a schema), items,
minItems, maxItems, minimum, maximum, oneOf (exactly one), anyOf, allOf,
$ref (any JSON pointer into the spec). Keywords that only document
(description, default, format, title, x-*) are not checked. Any other
keyword is refused by keywords_outside_subset(), so the spec cannot
grow a rule this validator would silently ignore.
"""

import os

import yaml_subset

CHECKED = {"type", "enum", "properties", "required", "additionalProperties", "items", "minItems",
           "maxItems", "minimum", "maximum", "oneOf", "anyOf", "allOf", "$ref"}
DOCUMENTING = {"description", "default", "format", "title", "summary"}
METHODS = ("get", "put", "post", "delete", "patch", "head", "options")


def resolve(spec, ref):
    if not ref.startswith("#/"):
        raise KeyError(f"$ref {ref!r}: only local references")
    node = spec
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        node = node[part]
    return node


def _type_ok(value, t):
    if t == "null":
        return value is None
    if t == "boolean":
        return isinstance(value, bool)
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if t == "string":
        return isinstance(value, str)
    if t == "array":
        return isinstance(value, list)
    if t == "object":
        return isinstance(value, dict)
    raise ValueError(f"unknown type {t!r}")


def validate(spec, schema, value, path="$", partial=False):
    """The list of errors ("$.a.b: ..."); empty when value validates.
    partial: an abridged example (docs' "..."): required is not checked."""
    errs = []
    if "$ref" in schema:
        errs += validate(spec, resolve(spec, schema["$ref"]), value, path, partial)
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_type_ok(value, t) for t in types):
            return errs + [f"{path}: {_show(value)} is not {' or '.join(types)}"]
    if "enum" in schema and value not in schema["enum"]:
        errs.append(f"{path}: {_show(value)} is not one of {schema['enum']}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        if not partial:
            for k in schema.get("required", []):
                if k not in value:
                    errs.append(f"{path}: required field '{k}' is missing")
        extra = schema.get("additionalProperties", True)
        for k, v in value.items():
            if k in props:
                errs += validate(spec, props[k], v, f"{path}.{k}", partial)
            elif extra is False:
                errs.append(f"{path}: field '{k}' is not in the schema")
            elif isinstance(extra, dict):
                errs += validate(spec, extra, v, f"{path}.{k}", partial)
    if isinstance(value, list):
        if "items" in schema:
            for i, v in enumerate(value):
                errs += validate(spec, schema["items"], v, f"{path}[{i}]", partial)
        if not partial and len(value) < schema.get("minItems", 0):
            errs.append(f"{path}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errs.append(f"{path}: more than {schema['maxItems']} items")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errs.append(f"{path}: {value} is below {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errs.append(f"{path}: {value} is above {schema['maximum']}")
    for sub in schema.get("allOf", []):
        errs += validate(spec, sub, value, path, partial)
    if "anyOf" in schema:
        results = [validate(spec, s, value, path, partial) for s in schema["anyOf"]]
        if all(results):
            errs.append(f"{path}: matches none of anyOf: " + _best(results))
    if "oneOf" in schema:
        results = [validate(spec, s, value, path, partial) for s in schema["oneOf"]]
        ok = sum(1 for r in results if not r)
        if ok == 0:
            errs.append(f"{path}: matches none of oneOf: " + _best(results))
        elif ok > 1 and not partial:
            errs.append(f"{path}: matches {ok} of oneOf's schemas, not exactly one")
    return errs


def _best(results):
    """The closest alternative's errors (fewest), to say what is wrong."""
    return "; ".join(min(results, key=len)[:3])


def _show(v):
    s = repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


def keywords_outside_subset(spec):
    """Schema keywords in the spec that validate() does not implement."""
    bad = set()

    def walk_schema(s, where):
        if not isinstance(s, dict):
            return
        for k, v in s.items():
            if k.startswith("x-") or k in DOCUMENTING:
                continue
            if k not in CHECKED:
                bad.add(f"{where}: {k}")
            if k == "properties":
                for name, sub in v.items():
                    walk_schema(sub, f"{where}.{name}")
            elif k in ("items", "additionalProperties"):
                walk_schema(v, where + "." + k)
            elif k in ("oneOf", "anyOf", "allOf"):
                for i, sub in enumerate(v):
                    walk_schema(sub, f"{where}.{k}[{i}]")

    for name, s in spec.get("components", {}).get("schemas", {}).items():
        walk_schema(s, name)
    for path, op, method in operations(spec):
        for where, s in op_schemas(spec, path, method):
            walk_schema(s, f"{method.upper()} {path} {where}")
    return sorted(bad)


def operations(spec):
    """(path, operation, method) for every operation."""
    for path, item in spec["paths"].items():
        for method in METHODS:
            if method in item:
                yield path, item[method], method


def deref(spec, node):
    while isinstance(node, dict) and "$ref" in node:
        node = resolve(spec, node["$ref"])
    return node


def parameters(spec, path, method):
    """The operation's parameters, the path item's included, by (in, name)."""
    out = {}
    item = spec["paths"][path]
    for p in item.get("parameters", []) + item[method].get("parameters", []):
        p = deref(spec, p)
        out[(p["in"], p["name"])] = p
    return out


def request_content(spec, path, method):
    body = item = spec["paths"][path][method].get("requestBody")
    if item is None:
        return {}
    body = deref(spec, body)
    return body.get("content", {})


def responses(spec, path, method):
    """{status string: (response object dereferenced)}."""
    return {str(k): deref(spec, v) for k, v in spec["paths"][path][method]["responses"].items()}


def op_schemas(spec, path, method):
    """Every inline schema of an operation: (where, schema)."""
    for (where, name), p in parameters(spec, path, method).items():
        if "schema" in p:
            yield f"{where} {name}", p["schema"]
    for mt, c in request_content(spec, path, method).items():
        if "schema" in c:
            yield f"request {mt}", c["schema"]
    for status, r in responses(spec, path, method).items():
        for mt, c in r.get("content", {}).items():
            if "schema" in c:
                yield f"{status} {mt}", c["schema"]


def success_schema(spec, path, method, media="application/json", status=None):
    """(status, schema) of the operation's success answer in that media type."""
    for st, r in sorted(responses(spec, path, method).items()):
        if status is not None and st != str(status):
            continue
        if status is None and not st.startswith("2"):
            continue
        c = r.get("content", {}).get(media)
        if c is not None:
            return st, c.get("schema", {})
    return None, None


def property_names(spec, schema, seen=None):
    """Every property name anywhere inside schema (through $ref, items,
    oneOf...): where the CLI's field names are looked up."""
    seen = set() if seen is None else seen
    names = set()
    if not isinstance(schema, dict) or id(schema) in seen:
        return names
    seen.add(id(schema))
    if "$ref" in schema:
        names |= property_names(spec, resolve(spec, schema["$ref"]), seen)
    for k, v in schema.get("properties", {}).items():
        names.add(k)
        names |= property_names(spec, v, seen)
    for k in ("items", "additionalProperties"):
        if isinstance(schema.get(k), dict):
            names |= property_names(spec, schema[k], seen)
    for k in ("oneOf", "anyOf", "allOf"):
        for sub in schema.get(k, []):
            names |= property_names(spec, sub, seen)
    return names


def load_spec(top):
    return yaml_subset.load(os.path.join(top, "docs", "openapi.yaml"))


def spec_ops(spec):
    return {(m.upper(), p) for p, _, m in operations(spec)}


def match_path(spec, path):
    """The spec path a concrete path is, the one with most literal segments."""
    segs = path.split("/")
    best, score = None, -1
    for p in spec["paths"]:
        ps = p.split("/")
        if len(ps) != len(segs):
            continue
        lit = 0
        for a, b in zip(ps, segs):
            if a.startswith("{") and a.endswith("}"):
                if not b:
                    break
            elif a != b:
                break
            else:
                lit += 1
        else:
            if lit > score:
                best, score = p, lit
    return best
