"""The database layer on SQLite and MariaDB: binding, table creation, per-thread connections."""

import threading
import time

import dramatiq
import peewee
import pytest

from lib.core.db import (
    MYSQL_DEADLOCK,
    QueuedSqliteDatabase,
    database,
    open_database,
    retrying_deadlocks,
    write_transaction,
)
from models import ALL_MODELS, BaseModel

from .helpers import run_cli, wait_for


class Note(BaseModel):
    text = peewee.CharField(max_length=200)
    thread = peewee.CharField(max_length=100)


def test_sqlite_runs_in_wal_mode(tmp_path):
    db = open_database(f"sqlite:///{tmp_path / 'a' / 'x.sqlite3'}")
    db.connect()
    assert db.execute_sql("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()


def test_sqlite_writers_of_one_process_take_turns_within_their_busy_timeout(tmp_path):
    """Four threads writing short transactions in turn, as a worker's threads apply results: SQLite's own wait
    polls and can leave one of them out past its busy timeout ("database is locked"); queued in the process, each
    gets the lock when the one before it commits."""
    db = QueuedSqliteDatabase(str(tmp_path / "turns.sqlite3"), busy_timeout=2.0, pragmas={"journal_mode": "wal"})
    previous = database.obj
    database.initialize(db)
    failures: list[Exception] = []

    def write(thread: int) -> None:
        try:
            for k in range(30):
                with write_transaction():
                    Note.create(text=f"{thread}-{k}", thread=str(thread))
                    time.sleep(0.05)  # the work a result's transaction does with the lock held
        except peewee.OperationalError as e:
            failures.append(e)
        finally:
            database.close()

    try:
        database.create_tables([Note])
        threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert not any(t.is_alive() for t in threads)
        assert failures == []
        assert Note.select().count() == 120
        database.close()
    finally:
        database.initialize(previous)


def test_a_queued_sqlite_writer_gives_up_after_its_busy_timeout_with_sqlites_error(tmp_path):
    """A writer queued behind one that does not commit fails as SQLite's own wait would, within its busy timeout,
    and writes once the lock is free."""
    db = QueuedSqliteDatabase(str(tmp_path / "held.sqlite3"), busy_timeout=0.2, pragmas={"journal_mode": "wal"})
    previous = database.obj
    database.initialize(db)
    held, done = threading.Event(), threading.Event()

    def hold() -> None:
        with write_transaction():
            held.set()
            done.wait(timeout=30)
        database.close()

    holder = threading.Thread(target=hold)
    try:
        database.create_tables([Note])
        holder.start()
        assert held.wait(timeout=30)
        with pytest.raises(peewee.OperationalError):
            with write_transaction():
                Note.create(text="late", thread="main")
        done.set()
        holder.join(timeout=30)
        with write_transaction():
            Note.create(text="after", thread="main")
        assert [n.text for n in Note.select()] == ["after"]
    finally:
        done.set()
        holder.join(timeout=30)
        database.close()
        database.initialize(previous)


def test_unicode_round_trips_and_threads_get_their_own_connections(db):
    database.create_tables([Note])
    seen = []
    together = threading.Barrier(4, timeout=10)

    def write(i: int) -> None:
        Note.create(text=f"鬼滅の刃 '%; -- {i}", thread=threading.current_thread().name)
        seen.append(database.connection())
        together.wait()  # all four connections open at once
        database.close()

    threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert Note.select().count() == 4
    assert sorted(n.text for n in Note.select()) == [f"鬼滅の刃 '%; -- {i}" for i in range(4)]
    assert len({id(c) for c in seen}) == 4
    database.drop_tables([Note])


def test_actor_writes_from_worker_threads_and_connections_close_at_shutdown(db, broker, start_worker):
    database.create_tables([Note])
    closed = []

    @dramatiq.actor(broker=broker, queue_name="work")
    def note(text: str) -> None:
        Note.create(text=text, thread=threading.current_thread().name)

    for i in range(6):
        note.send(f"n{i}")
    worker = start_worker(broker, threads=2)
    wait_for(lambda: Note.select().count() == 6, what="six rows")
    original_close = database.obj.close

    def tracking_close():
        closed.append(threading.current_thread().name)
        return original_close()

    database.obj.close = tracking_close
    worker.stop(timeout=10_000)
    database.obj.close = original_close
    writers = {n.thread for n in Note.select()}
    assert writers and writers <= set(closed)
    database.drop_tables([Note])


def test_db_init_is_idempotent(database_url, tmp_path, env):
    env = {**env, "DATABASE_URL": database_url}
    for _ in range(2):
        result = run_cli(env, "db", "init")
        assert result.returncode == 0, result.stderr
    db = open_database(database_url)
    tables = set(db.get_tables())
    assert {m._meta.table_name for m in ALL_MODELS} <= tables
    db.close()


@pytest.mark.parametrize("database_url", ["mysql"], indirect=True)
@pytest.mark.parametrize("attempts", [1, 3])
def test_a_deadlock_victim_runs_again(db, database_url, attempts):
    """Two transactions locking two rows in opposite orders: InnoDB rolls back the one that wrote less (ours)
    with error 1213; ``retrying_deadlocks`` runs it again once the other has committed. With one attempt the
    error is raised, as before."""
    from lib.text_pools.pool import load_rows
    from models import Title

    load_rows("titles", 1, 1, [f"t{i}" for i in range(50)])
    first, second = Title.select().order_by(Title.id).limit(2)
    other = open_database(database_url)
    other_has_first = threading.Event()
    ran = []

    def heavier_other() -> None:  # holds the first row (and 48 more), then asks for the second
        with other.atomic():
            # by primary-key ranges that skip the second row (a scan through it would wait for its lock)
            other.execute_sql("UPDATE titles SET text = CONCAT(text, '+') WHERE id = %s OR id > %s",
                              (first.id, second.id))
            other_has_first.set()
            wait_for(lambda: ran, timeout=10, what="our transaction to hold the second row")
            other.execute_sql("UPDATE titles SET text = CONCAT(text, '+') WHERE id = %s", (second.id,))
        other.close()

    def ours() -> str:
        with database.atomic():
            Title.update(text=Title.text.concat("!")).where(Title.id == second.id).execute()
            ran.append(1)
            other_has_first.wait(10)
            Title.update(text=Title.text.concat("!")).where(Title.id == first.id).execute()
        return "done"

    thread = threading.Thread(target=heavier_other)
    thread.start()
    try:
        if attempts == 1:
            with pytest.raises(peewee.OperationalError) as e:
                retrying_deadlocks(ours, attempts=1)
            assert e.value.args[0] == MYSQL_DEADLOCK
        else:
            assert retrying_deadlocks(ours, attempts=attempts) == "done"
            assert len(ran) == 2
            assert Title.get_by_id(first.id).text == "t0+!" and Title.get_by_id(second.id).text == "t1+!"
    finally:
        thread.join(20)


@pytest.mark.parametrize("database_url", ["mysql"], indirect=True)
def test_a_mysql_server_that_stops_answering_is_given_up_within_read_timeout(database_url):
    """A server that keeps the connection open and answers nothing (a frozen host: no reset, unlike a restart)
    held a query for good: read_timeout (DATABASE_URL's query, 300 s by default) bounds it, the error is the
    connection's, and the next query reconnects. A bad value is refused naming it."""
    import time
    from urllib.parse import urlsplit

    from .helpers import TcpProxy

    parts = urlsplit(database_url)
    proxy = TcpProxy(parts.hostname or "127.0.0.1", parts.port or 3306)
    try:
        db = open_database(f"mysql://{parts.username or 'root'}@127.0.0.1:{proxy.port}{parts.path}?read_timeout=2")
        assert db.execute_sql("SELECT 1").fetchone() == (1,)
        proxy.freeze()
        started = time.monotonic()
        with pytest.raises(peewee.OperationalError):
            db.execute_sql("SELECT 1")
        took = time.monotonic() - started
        proxy.cut()
        proxy.thaw()
        proxy.restore()
        assert db.execute_sql("SELECT 2").fetchone() == (2,)
        db.close()
    finally:
        proxy.close()
    assert 2 <= took < 2 + 10  # the bound (2 s), with slack for a loaded machine
    with pytest.raises(ValueError, match="read_timeout='soon'"):
        open_database(f"mysql://root@127.0.0.1:3306{parts.path}?read_timeout=soon")
