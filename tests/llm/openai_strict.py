"""What OpenAI's structured outputs reject in strict mode, as a responder for the stub server.

The rules (OpenAI's "Supported schemas" for ``strict: true``): the root is an object; every object
has ``additionalProperties: false`` and lists every property in ``required``; only the supported
keywords appear. A violation is HTTP 400 with OpenAI's error shape ("Invalid schema for
response_format ..."); a request without ``strict: true`` is answered, but this fake then
marks its reply as unconstrained so a test can see that nothing enforced the schema.
"""
from __future__ import annotations

from typing import Any

SUPPORTED = {
    "type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf",
    "description", "title", "$defs", "$ref", "pattern", "format", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
}


def strict_violations(schema: Any, path: str = "root") -> list[str]:
    """Every reason OpenAI's strict mode would refuse ``schema``."""
    out: list[str] = []
    if not isinstance(schema, dict):
        return [f"{path}: not a schema object"]
    for key in schema:
        if key not in SUPPORTED:
            out.append(f"{path}: '{key}' is not permitted")
    if schema.get("type") == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False:
            out.append(f"{path}: 'additionalProperties' is required to be supplied and to be false")
        missing = sorted(set(props) - set(schema.get("required") or []))
        if missing:
            out.append(f"{path}: 'required' is required to include every property; missing {missing}")
        for name, sub in props.items():
            out += strict_violations(sub, f"{path}.{name}")
    if "items" in schema:
        out += strict_violations(schema["items"], f"{path}[]")
    for i, sub in enumerate(schema.get("anyOf") or []):
        out += strict_violations(sub, f"{path}.anyOf[{i}]")
    return out


def check_request(body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
    """None when OpenAI would accept the request's response_format, else (status, error body)."""
    fmt = body.get("response_format")
    if not fmt:
        return None
    if fmt.get("type") == "json_object" and set(fmt) != {"type"}:
        return 400, _error(f"Unrecognized request argument supplied: response_format.{min(set(fmt) - {'type'})}")
    if fmt.get("type") != "json_schema":
        return None
    spec = fmt.get("json_schema") or {}
    name = spec.get("name", "")
    schema = spec.get("schema")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return 400, _error(f"Invalid schema for response_format '{name}': schema must be a JSON Schema of 'type: \"object\"'")
    if spec.get("strict") is True:
        bad = strict_violations(schema)
        if bad:
            return 400, _error(f"Invalid schema for response_format '{name}': In context=(), {bad[0]}.")
    return None


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": "response_format",
                      "code": None}}
