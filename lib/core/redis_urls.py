"""Redis URLs: which database one selects, the same server with another database, whether two share a server,
and the nodes of a Redis Cluster URL."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit

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


# Redis Cluster: REDIS_URL=redis+cluster://[user:password@]host:port[,host:port…] (rediss+cluster: TLS).
CLUSTER_SCHEMES = ("redis+cluster", "rediss+cluster")


def is_cluster_url(url: str) -> bool:
    return urlsplit(url).scheme in CLUSTER_SCHEMES


@dataclass(frozen=True)
class ClusterUrl:
    """A ``redis+cluster://`` URL taken apart: the nodes to start from, credentials, TLS."""

    nodes: tuple[tuple[str, int], ...]
    username: str | None = None
    password: str | None = None
    tls: bool = False


def parse_cluster_url(url: str) -> ClusterUrl:
    """Split a cluster URL; ValueError says what is wrong (no node, a port that is not a number, a database)."""
    parts = urlsplit(url)
    if parts.scheme not in CLUSTER_SCHEMES:
        raise ValueError(f"not a Redis Cluster URL (expected {' or '.join(s + '://' for s in CLUSTER_SCHEMES)})")
    userinfo, _, hosts = parts.netloc.rpartition("@")
    username, _, password = userinfo.partition(":")
    if parts.path.strip("/") not in ("", "0") or "db=" in parts.query:
        raise ValueError("a Redis Cluster has only database 0: drop the database from the URL")
    nodes = []
    for node in hosts.split(","):
        host, sep, port = node.strip().rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"cluster node {node.strip()!r} must be host:port")
        nodes.append((host.strip("[]"), int(port)))
    return ClusterUrl(tuple(nodes), unquote(username) or None, unquote(password) or None,
                      tls=parts.scheme == "rediss+cluster")
