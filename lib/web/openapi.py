"""The OpenAPI document of ``/api/v1``: FastAPI's, completed with the bounds that are settings.

A parameter bounded by a setting (the longest window, ``RETENTION_WINDOW``; the longest per-day series,
``RETENTION_DAILY``; the longest window of segments, ``RETENTION_DETAIL``) names that setting with ``bounded_by``
where it is declared; ``document`` writes the value of the application being served as the parameter's
``maximum``, taken from the same function the server checks the parameter with (``create_app`` passes them), so the
document and the check cannot drift apart. The name stays in the document too (``x-bounded-by``), for the reader.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

BOUND = "x-bounded-by"

#: The answer any operation may give while the database does not answer (``lib.web.app.database_unavailable``).
UNAVAILABLE = {
    "description": "Service Unavailable: the database does not answer (down, restarting); try again after "
                   "Retry-After seconds",
    "headers": {"Retry-After": {"description": "seconds to wait before trying again",
                                "schema": {"type": "integer", "minimum": 1}}},
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Problem"}}},
}


def bounded_by(setting: str) -> dict[str, Any]:
    """A parameter's ``json_schema_extra``: its maximum is ``setting``'s value in the served application."""
    return {BOUND: setting}


def parameters(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Every parameter of every operation of ``doc``."""
    return [parameter for item in doc.get("paths", {}).values() for operation in item.values()
            if isinstance(operation, dict) for parameter in operation.get("parameters", ())]


def document(app: FastAPI, bounds: Mapping[str, int]) -> dict[str, Any]:
    """``app``'s OpenAPI document (made once), each parameter bounded by a setting given its value from ``bounds``
    (setting name to value: a parameter naming a setting not in it is a programming error, raised here)."""
    if app.openapi_schema is None:
        doc = get_openapi(title=app.title, version=app.version, openapi_version=app.openapi_version,
                          description=app.description, routes=app.routes)
        for parameter in parameters(doc):
            schema = parameter.get("schema", {})
            if BOUND in schema:
                schema["maximum"] = bounds[schema[BOUND]]
        for item in doc.get("paths", {}).values():
            for operation in item.values():
                if isinstance(operation, dict) and "responses" in operation:
                    operation["responses"].setdefault("503", UNAVAILABLE)
        app.openapi_schema = doc
    return app.openapi_schema
