"""Small helpers shared by the tests."""

import os
import subprocess
import sys
import time
from pathlib import Path


def stored_id(stored: bytes) -> str:
    """A listing id read from the database as docs/operating/storage.md says it is stored: an item's ``m`` and
    digits as the number's big-endian bytes, any other id as a zero byte and its UTF-8."""
    stored = bytes(stored)
    return stored[1:].decode() if stored[:1] == b"\x00" else f"m{int.from_bytes(stored, 'big')}"


def wait_for(condition, timeout: float = 20.0, interval: float = 0.05, what: str = "condition"):
    """Poll until ``condition()`` is truthy; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


async def wait_until(condition, timeout: float = 20.0, interval: float = 0.02, what: str = "condition"):
    """``wait_for`` inside a coroutine: poll without blocking the event loop, fail after ``timeout`` seconds."""
    import asyncio

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        await asyncio.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def mysql_admin(url: str):
    """A connection as the administrator of the MySQL/MariaDB server of ``url`` (autocommit), and its database name."""
    from urllib.parse import urlsplit

    import pymysql

    parts = urlsplit(url)
    conn = pymysql.connect(host=parts.hostname, port=parts.port or 3306, user=parts.username or "root",
                           password=parts.password or "", autocommit=True)
    return conn, parts.path.strip("/")


#: What a test could change of a database's schema: its default collation, tables and columns (types,
#: collations), indexes and partitions.
_SCHEMA_QUERIES = (
    "SELECT DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s",
    "SELECT TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COLUMN_DEFAULT, COLLATION_NAME, EXTRA"
    " FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s ORDER BY 1, 2",
    "SELECT TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME, NON_UNIQUE"
    " FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = %s ORDER BY 1, 2, 3",
    "SELECT TABLE_NAME, PARTITION_NAME, PARTITION_DESCRIPTION"
    " FROM information_schema.PARTITIONS WHERE TABLE_SCHEMA = %s ORDER BY 1, 2",
)


def mysql_schema(url: str) -> str:
    """A fingerprint of the schema of ``url``'s database (``_SCHEMA_QUERIES``)."""
    import hashlib

    conn, name = mysql_admin(url)
    try:
        with conn.cursor() as cur:
            rows = []
            for query in _SCHEMA_QUERIES:
                cur.execute(query, (name,))
                rows.append(cur.fetchall())
    finally:
        conn.close()
    return hashlib.sha256(repr(rows).encode()).hexdigest()


def empty_mysql_tables(url: str, schema: str, drop: tuple[str, ...] = ()) -> bool:
    """Empty every table of ``url``'s database if its schema is still ``schema`` (``mysql_schema``), and drop
    the tables in ``drop`` (to be created again): a test on the full schema then starts from empty tables (and
    ids from 1) without the seconds of creating them all again. False, touching nothing, when a test changed
    the schema (or dropped the database)."""
    if mysql_schema(url) != schema:
        return False
    conn, name = mysql_admin(url)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s", (name,))
            tables = [t for (t,) in cur.fetchall()]
            cur.execute(f"USE `{name}`")
            cur.execute("SET FOREIGN_KEY_CHECKS = 0")
            for table in tables:
                cur.execute(f"{'DROP' if table in drop else 'TRUNCATE'} TABLE `{table}`")
    finally:
        conn.close()
    return True


def recreate_mysql_database(url: str, name: str | None = None, collate: str | None = None):
    """Drop and create the MySQL/MariaDB database of ``url`` (or ``name`` on its server), empty, in utf8mb4;
    returns the administrator's connection (autocommit) and the database's name, for more set-up."""
    conn, default = mysql_admin(url)
    name = name or default
    with conn.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
        cur.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4" + (f" COLLATE {collate}" if collate else ""))
    return conn, name


def run_cli(env: dict, *args: str, timeout: float = 60):
    """Run ``animetop ARGS`` as a user would, in a fresh process with ``env``."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    full_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env}
    return subprocess.run([sys.executable, "-m", "lib.cli", *args], env=full_env, capture_output=True, text=True,
                          timeout=timeout, cwd=Path(__file__).parent.parent)


class TcpProxy:
    """A loopback TCP forwarder the tests can cut and restore, to stand for a server going down."""

    def __init__(self, target_host: str, target_port: int) -> None:
        import socket
        import threading

        self.target = (target_host, target_port)
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.up = True
        self.connections: list = []
        self._lock = threading.Lock()
        self._flowing = threading.Event()
        self._flowing.set()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import socket
        import threading

        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if not self.up:
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self.connections += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, src, dst) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                self._flowing.wait()  # frozen: held, the connection open (a server that stopped answering)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.close()
                except OSError:
                    pass

    def cut(self) -> None:
        """Refuse new connections and drop the open ones: the server is 'down'."""
        import socket

        self.up = False
        with self._lock:
            for s in self.connections:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                    s.close()
                except OSError:
                    pass
            self.connections.clear()

    def restore(self) -> None:
        self.up = True

    def freeze(self) -> None:
        """Keep every connection open and pass nothing on: a server that stopped answering (no reset)."""
        self._flowing.clear()

    def thaw(self) -> None:
        self._flowing.set()

    def close(self) -> None:
        self.thaw()
        self.cut()
        self.listener.close()


class ForwardProxy:
    """A minimal HTTP forward proxy on loopback, counting what passes through it (proxy-switch tests).

    With ``user`` and ``password`` it wants Basic proxy credentials and answers 407 without them
    (``challenged`` counts those answers, ``requests`` what it forwarded).
    """

    def __init__(self, user: str | None = None, password: str | None = None) -> None:
        import base64
        import threading
        import urllib.request
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        proxy = self
        self.requests = self.challenged = 0
        expected = ("Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()) if user else None
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _forward(self):
                if expected is not None and self.headers.get("Proxy-Authorization") != expected:
                    proxy.challenged += 1
                    self.send_response(407)
                    self.send_header("Proxy-Authenticate", 'Basic realm="test"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                proxy.requests += 1
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("proxy-connection", "proxy-authorization", "host", "connection")}
                request = urllib.request.Request(self.path, data=body, method=self.command, headers=headers)
                try:
                    response = opener.open(request, timeout=30)
                    status, raw, rheaders = response.status, response.read(), response.headers
                except urllib.error.HTTPError as e:
                    status, raw, rheaders = e.code, e.read(), e.headers
                self.send_response(status)
                for k, v in rheaders.items():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            do_GET = do_POST = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# -- processes, read from /proc -----------------------------------------------------------------------------

def free_port(count: int = 1) -> int:
    """A TCP port on loopback that nothing uses right now, below the kernel's ephemeral range.

    With ``count``, the first of that many consecutive free ports (METRICS_PORT and the crawler's METRICS_PORT + 1).

    A port the kernel hands out for ``bind(0)`` is one it may also give to any outgoing connection's local end
    (another test's client of Redis or RabbitMQ) in the moment before the process it is meant for binds it: a
    CI run lost a /metrics port that way. Ports below the range are only ever taken by a listener's bind.
    """
    import random

    # each xdist worker draws from a band of its own, and never the same port twice
    low = max(_ephemeral_range()[0], 20000 + 8 * 64)
    band = (low - 20000) // 8
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    start = 20000 + band * (int(worker[2:]) % 8 if worker[2:].isdigit() else 0)
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.randrange(start, start + band - count)
        ports = range(port, port + count)
        if _handed_out.intersection(ports) or not all(_bindable(p) for p in ports):
            continue
        _handed_out.update(ports)
        return port
    raise RuntimeError("no free port below the ephemeral range")


_handed_out: set[int] = set()


def _bindable(port: int) -> bool:
    import socket

    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _ephemeral_range() -> tuple[int, int]:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = f.read().split()
            return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def processes_matching(pattern: bytes, where: str = "cmdline") -> list[int]:
    """Processes (but this one) whose command line, or ``environ``, contains ``pattern``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/{where}", "rb") as f:
                    if pattern in f.read():
                        found.append(int(entry))
            except (FileNotFoundError, ProcessLookupError, PermissionError):
                continue
    return found


def alive(pid: int | None) -> bool:
    """Whether a process runs (a zombie counts as gone)."""
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[1]) == pid:
                    out.append(int(entry))
            except (FileNotFoundError, ProcessLookupError, IndexError):
                continue
    return out


def descendants(pid: int) -> list[int]:
    found = []
    for child in children(pid):
        found += [child, *descendants(child)]
    return found


def cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except (FileNotFoundError, ProcessLookupError):
        return b""


def _status_number(pid: int, field: str) -> int:
    """A number from /proc/PID/status (0 if the process is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def threads(pid: int) -> int:
    return _status_number(pid, "Threads")


def rss_kib(pid: int) -> int:
    """Resident memory of one process, in KiB (0 if it is gone)."""
    return _status_number(pid, "VmRSS")


def parent_of(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return 0




def run_demo(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """The README's demo (``animetop demo``) in ``cwd``, as a user runs it (``env``: settings added to the
    environment); it must succeed. Returns what it printed (``assert_demo_ended_cleanly`` checks that)."""
    result = subprocess.run([sys.executable, "-m", "lib.cli", "demo", *args], cwd=cwd, capture_output=True,
                            text=True, timeout=300, env={**os.environ, "PYTHONPATH": os.getcwd(), **(env or {})})
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def assert_demo_ended_cleanly(stdout: str) -> None:
    """The demo ended with no dead letter and nothing left queued."""
    assert "dead letters: 0" in stdout, stdout
    assert "still queued" not in stdout, stdout


# -- a Redis server of a test's own ---------------------------------------------------------------------------

class RedisServer:
    """The system's ``redis-server`` on a free loopback port, its append-only file synced on every write, so a
    server killed and started again comes back with everything it acknowledged; for tests that take the state
    Redis away (the suite's shared Redis is never stopped).

    Parameters:
      directory: where its files go.
    """

    def __init__(self, directory: Path) -> None:
        import shutil

        if shutil.which("redis-server") is None:
            import pytest

            pytest.skip("redis-server is not installed")
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def ping(self) -> bool:
        import redis

        client = redis.Redis(port=self.port, socket_timeout=2, socket_connect_timeout=1)
        try:
            return bool(client.ping())
        except redis.RedisError:
            return False
        finally:
            client.close()

    def start(self) -> "RedisServer":
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--appendonly", "yes",
             "--appendfsync", "always", "--save", "", "--dir", str(self.directory), "--logfile", "redis.log"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(self.ping, timeout=30, what=f"redis-server on port {self.port}")
        return self

    def kill(self) -> None:
        """SIGKILL: a crash; what it acknowledged is in its append-only file."""
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None


def simulator_crawl_env(env: dict[str, str], sim, chromium: str, **extra: str) -> dict[str, str]:
    """``env`` with the crawler pointed at the simulator ``sim`` through ``chromium`` (unsandboxed: the tests run
    as root), a 15 s page timeout, and ``extra`` settings."""
    return {**env, "MERCARI_BASE_URL": sim.url, "CHROMIUM_PATH": chromium, "CHROMIUM_NO_SANDBOX": "true",
            "CRAWL_PAGE_TIMEOUT": "15s", **extra}


def empty_redis_databases(redis_server: str) -> None:
    """Flush this test worker's two Redis databases (``conftest.STATE_DB``, ``BROKER_DB``), for a benchmark run on
    them: it refuses databases that hold keys it did not leave."""
    import redis

    from .conftest import BROKER_DB, STATE_DB

    for db in (STATE_DB, BROKER_DB):
        client = redis.Redis.from_url(redis_server, db=db)
        client.flushdb()
        client.close()


def flatten(measures: dict, segment: bool = False) -> dict:
    """A window's measures (``lib.market.windows``) as one value per name, the names ``tests/market/scripted.py``'s
    ``expected_window`` gives its definitions. ``segment``: only the measures a segment's window has (a segment
    has no supply, coverage, heat or momentum, docs/concepts/measures.md "Segments"), without the intervals."""
    m, t = measures, measures["time_to_sell_hours"]
    values = {"inflow": m["inflow"]["value"], "outflow": m["outflow"]["value"], "tracked_hours": m["outflow"]["n"],
              "liquidity": m["liquidity"]["value"], "median_price": m["median_price"]["value"],
              "p25_price": m["p25_price"]["value"], "p75_price": m["p75_price"]["value"],
              "trimmed_mean_price": m["trimmed_mean_price"]["value"], "sell_through": m["sell_through"]["value"],
              "time_to_sell_median": t["median"]["value"], "time_to_sell_p25": t["p25"]["value"],
              "time_to_sell_p75": t["p75"]["value"], "time_to_sell_curve": t["curve"],
              "price_cut_share": m["price_cut_share"]["value"], "median_price_cut": m["median_price_cut"]["value"]}
    if segment:
        return values
    return {**values, "supply": m["supply"]["value"], "hours_of_supply": m["hours_of_supply"]["value"],
            "coverage": m["coverage"]["value"], "heat": m["heat"]["value"], "momentum": m["momentum"]["value"],
            **{f"{k}_interval": m[k].get("interval") for k in ("p25_price", "median_price", "p75_price",
                                                                 "sell_through", "heat", "momentum")},
            **{f"time_to_sell_{k}_interval": t[k].get("interval") for k in ("p25", "median", "p75")}}
