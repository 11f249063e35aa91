"""``docs/reference/api.md`` from the OpenAPI document the dashboard serves at ``/api/v1/openapi.json``: each
route with its parameters (types, defaults, bounds, allowed values), request body, the operator's credentials
where a route needs them, and every status it answers with its body; then every schema the routes name.

The document is the one an application with the default settings serves (``served_document``): the bounds that
are settings (``x-bounded-by``: the longest window, the longest per-day series) show their default values and
name the setting."""

from __future__ import annotations

from typing import Any

from lib.docs.markdown import cell, code, prose, table
from lib.web.openapi import BOUND

Schema = dict[str, Any]

REF = "#/components/schemas/"


def served_document() -> dict[str, Any]:
    """The OpenAPI document of the dashboard built with the default settings (no environment read, nothing
    connected: building the document touches neither Redis nor the database)."""
    from lib.core.settings import load_settings
    from lib.market.read_side import ReadSide
    from lib.web.api import WebContext
    from lib.web.app import create_app
    from lib.web.auth import OperatorAuth

    settings = load_settings({})
    app = create_app(WebContext(settings=settings, read_side=ReadSide(settings, None), status=dict,
                                dead_letters=None, auth=OperatorAuth(None)))
    return app.openapi()


def setting_default(name: str) -> str:
    from lib.core.settings import SPECS

    return next(spec.default or "" for spec in SPECS if spec.name == name)


def anchor(name: str) -> str:
    return "schema-" + name.lower()


def schema_link(name: str) -> str:
    return f"[{name}](#{anchor(name)})"


def type_of(schema: Schema) -> str:
    """A schema's type in words, schemas linked."""
    if "$ref" in schema:
        return schema_link(schema["$ref"].removeprefix(REF))
    if "const" in schema:
        return code(str(schema["const"]).lower() if isinstance(schema["const"], bool) else str(schema["const"]))
    for key in ("anyOf", "oneOf"):
        if key in schema:
            kinds = [type_of(s) for s in schema[key]]
            nullable = "null" in kinds
            text = " or ".join(k for k in kinds if k != "null")
            return f"{text} or null" if nullable else text
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        return f"array of {type_of(items)}" if items else "array"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object of {type_of(schema['additionalProperties'])}"
    if isinstance(kind, list):
        return " or ".join(kind)
    return kind or "any"


def constraints(schema: Schema) -> list[str]:
    """A schema's bounds and allowed values, in words (those of ``anyOf`` branches too)."""
    out: list[str] = []
    if "enum" in schema:
        out.append("one of " + ", ".join(code(str(v)) for v in schema["enum"]))
    if "minimum" in schema:
        out.append(f"≥ {schema['minimum']}")
    if "exclusiveMinimum" in schema:
        out.append(f"> {schema['exclusiveMinimum']}")
    if "maximum" in schema:
        bound = f"≤ {schema['maximum']}"
        if BOUND in schema:
            bound += f" ({code(schema[BOUND])} at its default, {code(setting_default(schema[BOUND]))})"
        out.append(bound)
    if "exclusiveMaximum" in schema:
        out.append(f"< {schema['exclusiveMaximum']}")
    for key, words in (("minLength", "at least {} characters"), ("maxLength", "at most {} characters"),
                       ("minItems", "at least {} items"), ("maxItems", "at most {} items")):
        if key in schema:
            out.append("not empty" if key.startswith("min") and schema[key] == 1 else words.format(schema[key]))
    if "pattern" in schema:
        out.append(f"matches {code(schema['pattern'])}")
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key, ()):
            out += constraints(branch)
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        out += [f"each {c}" for c in constraints(schema["items"])]
    return out


def default_of(schema: Schema) -> str:
    if "default" not in schema:
        return ""
    value = schema["default"]
    if isinstance(value, bool):
        return code(str(value).lower())
    if value is None:
        return code("null")
    return code(str(value))


def credentials(doc: dict[str, Any]) -> list[str]:
    schemes = doc.get("components", {}).get("securitySchemes", {})
    if not schemes:
        return []
    lines = ["## Operator credentials", "",
             "A route marked *operator only* answers only a request that carries one of these "
             "(without `DASHBOARD_TOKEN` set, none does):", ""]
    for name, scheme in schemes.items():
        if scheme.get("type") == "http":
            how = f"HTTP {scheme.get('scheme', '')} authentication"
        elif scheme.get("type") == "apiKey":
            how = f"the {scheme.get('in')} {code(scheme.get('name', ''))}"
        else:
            how = scheme.get("type", "")
        lines.append(f"* {code(name)}: {how}; {prose(scheme.get('description', ''))}")
    return lines + [""]


def operation(path: str, method: str, op: dict[str, Any]) -> list[str]:
    title = f"{method.upper()} {path}"
    lines = [f"### `{title}`", ""]
    lines.append(f"*{op.get('summary', '')}.*" + (f" {prose(op['description'])}" if op.get("description") else ""))
    lines.append("")
    if op.get("security"):
        names = " or ".join(code(name) for requirement in op["security"] for name in requirement)
        lines += [f"**Operator only**: {names} ([credentials](#operator-credentials)).", ""]
    parameters = op.get("parameters", [])
    if parameters:
        rows = []
        for p in parameters:
            schema = p.get("schema", {})
            rows.append((code(p["name"]), p["in"], cell(type_of(schema)), "yes" if p.get("required") else "no",
                         default_of(schema), cell("; ".join(constraints(schema))),
                         cell(prose(p.get("description", schema.get("description", ""))))))
        lines += ["Parameters:", "",
                  *table(("name", "in", "type", "required", "default", "bounds and values", "meaning"), rows), ""]
    body = op.get("requestBody")
    if body:
        for media, content in body.get("content", {}).items():
            required = "required" if body.get("required") else "optional"
            lines += [f"Request body ({code(media)}, {required}): {type_of(content.get('schema', {}))}.", ""]
    responses: list[tuple[str, str, str]] = []
    for status, response in op.get("responses", {}).items():
        bodies = [f"{code(media)}: {type_of(content['schema'])}" if content.get("schema") else code(media)
                  for media, content in response.get("content", {}).items()]
        responses.append((code(status), cell(response.get("description", "")), cell("; ".join(bodies)) or "(none)"))
    lines += ["Responses:", "", *table(("status", "meaning", "body"), responses), ""]
    return lines


def schema_section(name: str, schema: Schema) -> list[str]:
    lines = [f"### {name} {{#{anchor(name)}}}", ""]
    if schema.get("description"):
        lines += [prose(schema["description"]), ""]
    alternatives = schema.get("anyOf") or schema.get("oneOf")
    if alternatives and "properties" in schema:
        options = []
        for branch in alternatives:
            fields = []
            for field in branch.get("required", []):
                limits = constraints(branch.get("properties", {}).get(field, {}))
                const = branch.get("properties", {}).get(field, {}).get("const")
                text = code(field) + (f" = {type_of({'const': const})}" if const is not None else "")
                fields.append(text + (f" ({', '.join(limits)})" if limits else ""))
            options.append(" and ".join(fields))
        lines += ["Must give " + ", or ".join(options) + ".", ""]
    properties = schema.get("properties", {})
    if properties:
        required = set(schema.get("required", []))
        rows = [(code(field), cell(type_of(s)), "yes" if field in required else "no", default_of(s),
                 cell("; ".join(constraints(s))), cell(prose(s.get("description", ""))))
                for field, s in properties.items()]
        lines += table(("field", "type", "required", "default", "bounds and values", "meaning"), rows)
        if schema.get("additionalProperties") is True:
            lines += ["", "Further fields may be present."]
        lines.append("")
    elif schema.get("type"):
        lines += [f"Type: {type_of(schema)}" + (f" ({', '.join(constraints(schema))})" if constraints(schema)
                                                 else "") + ".", ""]
    return lines


def page(doc: dict[str, Any] | None = None) -> str:
    doc = served_document() if doc is None else doc
    info = doc.get("info", {})
    lines = ["# HTTP API", "",
             "<!-- Generated from the OpenAPI document the dashboard serves (lib/web/) by "
             "`python -m lib.docs.generate`: edit the routes and their models, not this file (tests/test_docs.py "
             "checks it). -->", "",
             prose(info.get("description", "")), "",
             f"This is the OpenAPI {doc.get('openapi', '')} document of `/api/v1` (version "
             f"{info.get('version', '')}) in words. A running dashboard serves the document itself at "
             "`/api/v1/openapi.json`; its bounds that are settings (`RETENTION_WINDOW`, `RETENTION_DAILY`) are "
             "that deployment's values, here their defaults. What the pages do with the API, and why it is built "
             "this way: [Dashboard and HTTP API](../operating/dashboard.md).", "",
             "Every route answers 422 with FastAPI's validation errors ([HTTPValidationError]"
             "(#schema-httpvalidationerror)) for a parameter or body that does not fit its schema, and the other "
             "error statuses with a [Problem](#schema-problem), `{\"detail\": …}`. A method a path does not "
             "answer gets 405 with every method it does in `Allow`.", ""]
    lines += credentials(doc)
    lines += ["## Routes", ""]
    for path, item in doc.get("paths", {}).items():
        for method, op in item.items():
            if isinstance(op, dict) and method in ("get", "put", "post", "delete", "patch", "head", "options"):
                lines += operation(path, method, op)
    schemas = doc.get("components", {}).get("schemas", {})
    if schemas:
        lines += ["## Schemas", ""]
        for name in sorted(schemas):
            lines += schema_section(name, schemas[name])
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines) + "\n"
