"""The dashboard's ASGI application: the pages, ``/api/v1`` and the static files, behind strict headers."""

from __future__ import annotations

import logging
from functools import partial
from pathlib import Path
from typing import Any

import peewee
from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.exceptions import HTTPException
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.routing import Match

from lib.core.redaction import redact_text
from lib.market.retention import WindowBeyondRetention, max_window_hours
from lib.segments.character_store import UnknownIp
from lib.web import characters_api
from lib.web.api import IpId, WebContext, router
from lib.web.openapi import document

HERE = Path(__file__).parent
templates = Jinja2Templates(directory=str(HERE / "templates"))  # autoescapes .html templates

#: Only our own scripts and styles run (no inline script: market text can never become code), listing images
#: may come from anywhere over HTTPS, and no other site may frame the pages.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: https:; "
                               "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}


class SecurityHeaders(BaseHTTPMiddleware):
    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        response = await call_next(request)
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        if request.url.path.startswith("/api/"):
            response.headers.setdefault("Cache-Control", "no-store")
        return response


#: The methods a 405's ``Allow`` may name (CONNECT and TRACE are answered by no route).
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


async def method_not_allowed(request: Request, exc: Exception) -> Response:
    """405 with an ``Allow`` header naming every method some route answers on the path. Starlette names only those
    of the first route matching the path, while FastAPI makes one route per method (``/api/v1/session``: POST and
    DELETE); each method is asked of the routes as the router itself would (``matches``)."""
    assert isinstance(exc, HTTPException)
    path = {"type": "http", "path": request.scope["path"], "root_path": request.scope.get("root_path", "")}
    allowed = [method for method in METHODS
               if any(route.matches({**path, "method": method})[0] is Match.FULL for route in request.app.routes)]
    return await http_exception_handler(request, HTTPException(405, exc.detail,
                                                               {**(exc.headers or {}), "Allow": ", ".join(allowed)}))


log = logging.getLogger(__name__)

#: Seconds a client is asked to wait (``Retry-After``) when the database does not answer: a server restart or a
#: failover takes seconds, and a dashboard that polls should not hammer one that is coming back.
DATABASE_RETRY_AFTER = 5


async def database_unavailable(request: Request, exc: Exception) -> Response:
    """503 with ``Retry-After`` when the database cannot answer (down, restarting, out of connections), rather
    than a 500: nothing is wrong with the request, and the same request will succeed once the database is back.
    The reason goes to the log (credentials redacted), not to the client."""
    log.warning("%s %s: the database is unavailable (%s); answered 503", request.method, request.url.path,
                redact_text(str(exc)))
    return JSONResponse({"detail": "the database is unavailable; try again shortly"}, status_code=503,
                        headers={"Retry-After": str(DATABASE_RETRY_AFTER)})


async def unknown_ip(request: Request, exc: Exception) -> Response:
    """404 for an IP no one has, from any route (the read side's answers, the character lists)."""
    return await http_exception_handler(request, HTTPException(404, str(exc)))


async def window_beyond_retention(request: Request, exc: Exception) -> Response:
    """400 for a window (or a number of days) longer than the storage keeps: the request asks for what no setting
    of this server answers (``max_hours``, ``max_days``, ``max_segment_hours`` of /meta)."""
    return await http_exception_handler(request, HTTPException(400, str(exc)))


def create_app(ctx: WebContext) -> FastAPI:
    """The application over ``ctx`` (see ``WebContext``)."""
    app = FastAPI(title="animetop", version="1", openapi_url="/api/v1/openapi.json", docs_url=None, redoc_url=None,
                  description="How hot anime and manga franchises are on Mercari Japan: leaderboard, per-IP series, "
                              "operations. Times are Unix seconds or ISO 8601 in DISPLAY_TZ.")
    app.state.context = ctx
    app.add_middleware(SecurityHeaders)
    app.add_exception_handler(405, method_not_allowed)
    # the read side's refusals, answered the same from every route (each route's ``responses`` declares them)
    app.add_exception_handler(UnknownIp, unknown_ip)
    app.add_exception_handler(WindowBeyondRetention, window_beyond_retention)
    # peewee's errors of the connection and of the server's state; a query the server refuses is an
    # OperationalError too on SQLite (a missing table), which is no client's fault either
    app.add_exception_handler(peewee.OperationalError, database_unavailable)
    app.add_exception_handler(peewee.InterfaceError, database_unavailable)
    app.include_router(router)
    app.include_router(characters_api.router)
    # the bounds the server checks (lib.web.api's 400s), from the same functions, into the document
    bounds = {"RETENTION_WINDOW": max_window_hours(ctx.settings), "RETENTION_DAILY": ctx.read_side.max_days()}
    app.openapi = partial(document, app, bounds)  # type: ignore[method-assign]  # FastAPI's way to extend it
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")

    def page(request: Request, name: str, **values: Any) -> HTMLResponse:
        return templates.TemplateResponse(request, f"{name}.html",
                                          {"page": name, "timezone": ctx.settings.display_tz, **values})

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def leaderboard_page(request: Request) -> HTMLResponse:
        return page(request, "leaderboard")

    @app.get("/ip/{ip_id}", response_class=HTMLResponse, include_in_schema=False)
    def ip_page(request: Request, ip_id: IpId) -> HTMLResponse:
        return page(request, "ip", ip_id=ip_id)

    @app.get("/segments", response_class=HTMLResponse, include_in_schema=False)
    def segments_page(request: Request) -> HTMLResponse:
        return page(request, "segments")

    @app.get("/operations", response_class=HTMLResponse, include_in_schema=False)
    def operations_page(request: Request) -> HTMLResponse:
        return page(request, "operations")

    return app
