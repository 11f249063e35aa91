"""Who may change things: the operator token (``DASHBOARD_TOKEN``), its session cookie, and CSRF protection.

Reading needs nothing. Requeue and purge of dead letters, and changes to the IPs' character lists, need the
token, presented either

* as ``Authorization: Bearer <token>`` (scripts; a browser never adds that header to a cross-site request, so
  it needs no CSRF check), or
* through a session: ``POST /api/v1/session`` with the token sets an HttpOnly, SameSite=Strict cookie, and
  every change must then also carry the session's CSRF token in ``X-CSRF-Token`` (the pages read it from a
  ``<meta>`` tag; another site can neither read it nor set the header) and, when the browser sends one, an
  ``Origin`` of this server.

Without a token configured, nothing can be changed: the dashboard is read-only.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable

from fastapi import HTTPException, Request
from fastapi.security import APIKeyCookie, HTTPBearer

SESSION_COOKIE = "animetop_session"
CSRF_HEADER = "X-CSRF-Token"
SESSION_SECONDS = 12 * 3600

#: The two ways to present the operator's credentials, as the OpenAPI document declares them (the routes that
#: need them depend on these; ``OperatorAuth.require_operator`` checks them).
operator_token = HTTPBearer(scheme_name="operatorToken", auto_error=False,
                            description="`Authorization: Bearer <DASHBOARD_TOKEN>` (scripts)")
operator_session = APIKeyCookie(name=SESSION_COOKIE, scheme_name="operatorSession", auto_error=False,
                                description="the session cookie POST /api/v1/session sets; a change must also carry "
                                            f"the session's CSRF token in `{CSRF_HEADER}`")


class OperatorAuth:
    """Checks the operator token and signs sessions and CSRF tokens with a key derived from it.

    Parameters:
      token: ``DASHBOARD_TOKEN``; None makes every change refused (read-only).
      clock: seconds since the epoch, for session expiry (real time: sessions are about people).
    """

    def __init__(self, token: str | None, clock: Callable[[], float] = time.time) -> None:
        self.token = token
        self.clock = clock
        self._key = hashlib.sha256(b"animetop-dashboard\0" + token.encode()).digest() if token else b""

    @property
    def enabled(self) -> bool:
        return self.token is not None

    def _sign(self, purpose: str, value: str) -> str:
        return hmac.new(self._key, f"{purpose}\0{value}".encode(), hashlib.sha256).hexdigest()[:32]

    def token_matches(self, presented: str) -> bool:
        return self.token is not None and hmac.compare_digest(presented.encode(), self.token.encode())

    def new_session(self) -> str:
        """A session cookie's value: a random nonce, its expiry and their signature."""
        body = f"{secrets.token_urlsafe(16)}.{int(self.clock()) + SESSION_SECONDS}"
        return f"{body}.{self._sign('session', body)}"

    def session_of(self, cookie: str | None) -> str | None:
        """The session (nonce and expiry) of a valid, unexpired cookie; None otherwise."""
        if not self.enabled or not cookie or cookie.count(".") != 2:
            return None
        body, _, signature = cookie.rpartition(".")
        if not hmac.compare_digest(signature, self._sign("session", body)):
            return None
        try:
            expires = int(body.rpartition(".")[2])
        except ValueError:
            return None
        return body if expires > self.clock() else None

    def csrf_token(self, session: str) -> str:
        return self._sign("csrf", session)

    def request_session(self, request: Request) -> str | None:
        return self.session_of(request.cookies.get(SESSION_COOKIE))

    def require_operator(self, request: Request) -> None:
        """Raise 403 (read-only, or a bad token, CSRF token or origin) or 401 (no credentials) unless the request
        comes from an operator."""
        if not self.enabled:
            raise HTTPException(403, "the dashboard is read-only: set DASHBOARD_TOKEN to allow changes")
        header = request.headers.get("authorization", "")
        if header.lower().startswith("bearer "):
            if self.token_matches(header[7:].strip()):
                return
            raise HTTPException(403, "wrong operator token")
        session = self.request_session(request)
        if session is None:
            raise HTTPException(401, "sign in with the operator token first")
        presented = request.headers.get(CSRF_HEADER, "")
        if not hmac.compare_digest(presented, self.csrf_token(session)):
            raise HTTPException(403, f"missing or wrong {CSRF_HEADER}")
        origin = request.headers.get("origin")
        if origin is not None and origin != f"{request.url.scheme}://{request.url.netloc}":
            raise HTTPException(403, f"cross-site request from {origin!r} refused")
