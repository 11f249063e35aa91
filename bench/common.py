"""Shared by the benchmarks: timing, a Redis to run against, result lines."""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from lib.core.embedded_redis import EmbeddedRedis
from lib.core.redis_urls import with_redis_db
from lib.core.settings import load_settings, use_settings


def load_average() -> str:
    """The machine's load, for a report: the measurements of a shared machine mean little without it."""
    one, five, _ = os.getloadavg()
    return f"{one:.1f} (5 min {five:.1f}) on {os.cpu_count()} cores"


def best_of(fn: Callable[[], object], repeat: int = 5) -> float:
    """Fastest of ``repeat`` runs, in seconds (the least disturbed by the rest of the machine)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def report(name: str, value: float, floor: float, unit: str = "s") -> None:
    ratio = value / floor if floor else float("inf")
    print(f"  {name:52} {value:12.6f} {unit:4}  floor {floor:12.6f}  ratio {ratio:6.2f}x")


@contextmanager
def bench_settings(tmp: Path, database: Path | str | None = None, private_redis: bool = False):
    """Settings on BENCH_REDIS_URL (default local Redis) with the databases BENCH_REDIS_DBS names (state, broker:
    default 2,3, below the pairs a test run's workers flush, 14,15 down to 8,9; a test run gives its own), flushed
    first unless they hold keys no benchmark left (``claim_redis_database``), or the embedded Redis (always with
    ``private_redis``: runs side by side in several processes then share no database), stopped on the way out; the
    database ``database`` (a SQLite file, kept, or a ``mysql://`` URL), else a SQLite file in ``tmp``."""
    base = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379")
    state_db, broker_db = (int(n) for n in os.environ.get("BENCH_REDIS_DBS", "2,3").split(","))
    url = database if isinstance(database, str) else f"sqlite:///{database or tmp / 'bench.sqlite3'}"
    env = {"DATA_DIR": str(tmp), "LOG_LEVEL": "WARNING", "DATABASE_URL": url}
    import redis

    try:
        if not private_redis:
            redis.Redis.from_url(base, socket_connect_timeout=1).ping()
            env.update(REDIS_URL=with_redis_db(base, state_db), BROKER_URL=with_redis_db(base, broker_db))
    except redis.ConnectionError:
        pass  # embedded Redis under tmp
    settings = load_settings(env)
    held = None
    if "REDIS_URL" in env:  # start from empty databases, whatever an earlier benchmark left
        held = hold_redis_databases(env["REDIS_URL"], env["BROKER_URL"])
        for url in (env["REDIS_URL"], env["BROKER_URL"]):
            claim_redis_database(url)
    use_settings(settings)
    try:
        yield settings
    finally:
        use_settings(None)
        if held is not None:
            held.close()  # and its lock with it
        if "REDIS_URL" in env:  # a benchmark flushes its databases as it goes (cold caches): mark them again
            for url in (env["REDIS_URL"], env["BROKER_URL"]):
                try:
                    redis.Redis.from_url(url, socket_connect_timeout=1).set(BENCH_OWNED, "1")
                except redis.RedisError:
                    pass  # gone with the run: the next one finds what it finds
        else:  # the embedded Redis, started by the app under tmp on its first connection, if any
            EmbeddedRedis(settings.data_path).stop()


#: The key a benchmark leaves in each Redis database it flushed: the next run may flush that database again.
#: Outside the application's namespace (``lib.core.keys``), which the broker's maintenance scans.
BENCH_OWNED = "animetop-bench:owned"


def hold_redis_databases(state: str, broker: str) -> IO[bytes]:
    """An exclusive lock on the pair of Redis databases a benchmark runs on, for as long as the returned file is
    open (the process's end lets it go, however it ends): a second benchmark started on the same pair would flush
    and write the first one's keys mid-run, and both would print numbers of neither. The lock is a file of this
    machine's temporary directory, so it holds among the runs of one machine."""
    name = hashlib.blake2b(f"{state}|{broker}".encode(), digest_size=8).hexdigest()
    handle = open(Path(tempfile.gettempdir()) / f"animetop-bench-{name}.lock", "wb")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise SystemExit(f"another benchmark is running on the Redis databases {state} and {broker}: run this one "
                         "after it, or on two other databases (BENCH_REDIS_DBS=STATE,BROKER)") from None
    return handle


def claim_redis_database(url: str) -> None:
    """Flush the Redis database ``url`` names for a benchmark, unless it holds keys a benchmark did not leave:
    a database of some other use (BENCH_REDIS_DBS is a number anyone may get wrong) stops the run instead,
    naming the setting and leaving the keys alone."""
    import redis

    client = redis.Redis.from_url(url)
    held = client.dbsize()
    if held and not client.exists(BENCH_OWNED):
        raise SystemExit(f"BENCH_REDIS_DBS: the Redis database {url} holds {held:,} key(s) that no benchmark left; "
                         "name empty databases (BENCH_REDIS_DBS=STATE,BROKER, and BENCH_REDIS_URL), or empty that "
                         "one yourself if it is yours to lose")
    client.flushdb()
    client.set(BENCH_OWNED, "1")


def market_options(argv: list[str], usage: str, ips: int, days: int = 0) -> tuple[Path | str | None, int, int]:
    """``--db PATH`` (a SQLite file kept and reused) or ``--db mysql://…`` (a MySQL/MariaDB database, filled
    and kept likewise), ``--ips N``: the benchmark market's IPs (``ips`` by default), and, for a benchmark that
    gives ``days`` (0: it takes no ``--days``), ``--days N``: the days of market its windows cover (``days`` by
    default; fewer make a quick check)."""
    keep: Path | str | None = None
    counts = {"--ips": ips} | ({"--days": days} if days > 0 else {})
    rest = list(argv)
    while rest:
        if len(rest) >= 2 and rest[0] == "--db":
            keep = rest[1] if rest[1].startswith("mysql://") else Path(rest[1]).resolve()
        elif len(rest) >= 2 and rest[0] in counts and rest[1].isdigit() and int(rest[1]) > 0:
            counts[rest[0]] = int(rest[1])
        else:
            raise SystemExit(f"usage: {usage} [--db PATH | --db mysql://…] " + " ".join(f"[{k} N]" for k in counts))
        rest = rest[2:]
    return keep, counts["--ips"], counts.get("--days", 0)


#: The table a filled MySQL/MariaDB benchmark database names its data set in.
STAMP = "bench_filled"


def filled(database: Path | str | None, marker: str) -> bool:
    """Whether ``database`` was already filled with the data set ``marker`` names (a finished fill leaves it in
    a file beside the SQLite database, or in the MySQL database's ``STAMP`` table, bound by then, so an
    interrupted one is not reused)."""
    if database is None:
        return False
    if isinstance(database, str):
        from lib.core.db import database as db

        if STAMP not in db.get_tables():
            return False
        return [marker] == [m for (m,) in db.execute_sql(f"SELECT marker FROM {STAMP}").fetchall()]  # noqa: S608
    stamp = database.with_name(database.name + ".filled")
    return database.exists() and stamp.exists() and stamp.read_text() == marker


def mark_filled(database: Path | str | None, marker: str) -> None:
    if isinstance(database, str):
        from lib.core.db import database as db

        db.execute_sql(f"CREATE TABLE {STAMP} (marker VARCHAR(200) NOT NULL)")
        db.execute_sql(f"INSERT INTO {STAMP} VALUES (%s)", (marker,))  # noqa: S608
    elif database is not None:
        database.with_name(database.name + ".filled").write_text(marker)


def empty_database(database: Path | str | None) -> None:
    """Remove a kept database's earlier data set: the SQLite file, or every table of the bound MySQL database."""
    if isinstance(database, str):
        from lib.core.db import database as db

        for table in db.get_tables():
            db.execute_sql(f"DROP TABLE `{table}`")
    elif database is not None:
        database.unlink(missing_ok=True)
        for suffix in ("-wal", "-shm"):
            database.with_name(database.name + suffix).unlink(missing_ok=True)
