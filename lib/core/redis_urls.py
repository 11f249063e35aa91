"""Redis URLs: which database one selects, the same server with another database, whether two share a server."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

REDIS_SCHEMES = ("redis", "rediss", "unix")


def redis_db_of(url: str) -> int:
    """The database number a Redis URL selects (``/N`` or ``?db=N``), 0 if none."""
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    if "db" in query:
        return int(query["db"][0])
    path = parts.path.strip("/")
    if parts.scheme != "unix" and path:
        return int(path)
    return 0


def with_redis_db(url: str, db: int) -> str:
    """The same Redis server with database ``db`` selected."""
    parts = urlsplit(url)
    if parts.scheme == "unix":
        query = "&".join(q for q in parts.query.split("&") if q and not q.startswith("db="))
        query = f"{query}&db={db}" if query else f"db={db}"
        return f"unix://{parts.path}?{query}"
    return parts._replace(path=f"/{db}").geturl()


def names_a_db(url: str) -> bool:
    parts = urlsplit(url)
    return "db=" in parts.query or (parts.scheme != "unix" and bool(parts.path.strip("/")))


def redis_server_of(url: str) -> tuple[object, ...]:
    parts = urlsplit(url)
    if parts.scheme == "unix":
        return ("unix", parts.path)
    return (parts.hostname, parts.port or 6379)
