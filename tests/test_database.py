"""The database layer on SQLite and MariaDB: binding, table creation, per-thread connections."""

import threading

import dramatiq
import peewee

from lib.core.db import database, open_database
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
