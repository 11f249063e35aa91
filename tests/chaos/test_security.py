"""Security checks, on real services (issue #9):

1. no SQL is built from input strings: hostile keywords, titles, pool texts, task ids and record keys go
   through the CLI, the catalogue, the read side, the pool and the collector and come back byte for byte, on
   SQLite and MariaDB/MySQL, and a scan of the code base fails on SQL built with f-strings, ``format`` or ``%``;
2. credentials in URLs never reach logs, ``status``, ``settings``, dead-letter reasons or error messages;
3. msgpack decoding has limits: oversized, deeply nested and lying-header messages are refused at once, with
   little memory, and dead-lettered with the reason by a real worker;
4. Chromium runs sandboxed unless CHROMIUM_NO_SANDBOX is on, checked on real Chromium processes.
"""

from __future__ import annotations

import ast
import base64
import csv
import io
import json
import os
import secrets
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
import tracemalloc
import uuid
from contextlib import redirect_stderr, redirect_stdout
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import dramatiq
import pytest
import redis
from dramatiq.errors import DecodeError

from lib import cli
from lib.core.clock import Clock, naive_utc
from lib.core.db import bind_database, database
from lib.core.schema import create_tables
from lib.core.settings import load_settings, use_settings
from lib.core.redaction import redact_text, redact_url

from ..conftest import MYSQL_URL, need
from ..helpers import ForwardProxy, mysql_admin, run_cli, wait_for
from .conftest import descendants

ROOT = Path(__file__).resolve().parents[2]


def call_cli(*argv: str) -> tuple[int, str, str]:
    """``animetop ARGV`` in this process (argv can carry what a real command line cannot, e.g. NUL)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


# == 1. No SQL from input strings =============================================================================

#: Keywords an operator may type, chosen to break SQL built from strings, LIKE patterns, escaping, collations.
HOSTILE = [
    "'; DROP TABLE ip_metadata; --",
    "Robert'); DROP TABLE ip_metadata;--",
    "' OR '1'='1",
    '" OR ""="',
    "100%", "_%", "%", "_", "%_%", "\\%",
    "a\\b", "\\", "\\'", '\\"',
    '鬼滅の刃 "x"', "it's 100% \"real\"; --",
    "`ip_metadata`", "[x]", "$1", "?", ":name", "%s", "%(x)s", "{0}", "@@version", "/* c */ x", "-- c", "#c",
    "🔥", "🎉", "👨‍👩‍👧", "𠮷野家",            # outside the BMP: MySQL's default collation calls them all equal
    "ONE PIECE", "one piece",                 # case-insensitive collations call these equal
    "ｳﾏ娘", "ウマ娘", "é", "e\u0301", "ß", "ss",  # width, normalization, expansion
    "a\u200bb", "\u202eabc", "\u3000全角空白\u3000", "trailing space", "trailing space ", "line\u2028sep", "\ufeffbom",
    "鬼" * 200,                               # the longest keyword allowed, 600 bytes of UTF-8
]
#: Control characters (C0, DEL, C1): never part of a search word, so a keyword with one is refused.
CONTROL = ["nul\x00x", "tab\tx", "nl\nx", "cr\rx", "\x1b[31mred", "del\x7fx", "c1\x85x", "csi\x9bx"]
#: Strings from outside (listing titles, item ids, pool texts, export rows) are data: kept as they are,
#: control characters included.
DATA = HOSTILE[:-1] + CONTROL + ["multi\nline\ncontent\r\n", "\x00", "ABC", "abc"]


def all_tables() -> set[str]:
    from models import ALL_MODELS

    return {model._meta.table_name for model in ALL_MODELS}


@pytest.fixture
def cli_settings(db, database_url, env):
    """The process's settings pointing at the parametrized database (the CLI reads them)."""
    settings = load_settings({**env, "DATABASE_URL": database_url})
    use_settings(settings)
    yield settings
    use_settings(None)


def test_hostile_keywords_round_trip_through_cli_catalogue_read_side_and_results(cli_settings, env, database_url):
    from lib.market.read_side import ReadSide
    from lib.core.redis_client import state_redis
    from lib.market.processing import CrawlResult, ResultProcessor
    from models import IpMetadata, ItemSnapshot

    settings = cli_settings
    half = len(HOSTILE) // 2
    for keyword in HOSTILE[:half]:                       # `animetop ip add KEYWORD --name KEYWORD`
        code, out, err = call_cli("ip", "add", keyword, "--name", keyword)
        assert code == 0, err
        assert repr(keyword) in out
    csv_file = Path(settings.data_path) / "ips.csv"      # `animetop ip import` of a CSV file
    csv_file.parent.mkdir(parents=True, exist_ok=True)
    with csv_file.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["keyword", "name", "weight"])
        writer.writerows([k, k, "1.5"] for k in HOSTILE[half:])
    code, out, err = call_cli("ip", "import", str(csv_file))
    assert (code, err) == (0, "") and f"{len(HOSTILE) - half} IP(s) added" in out

    listed = json.loads(run_cli({**env, "DATABASE_URL": database_url}, "ip", "list", "--format", "json").stdout)
    assert [r["keyword"] for r in listed] == HOSTILE     # a real `animetop` process, byte for byte
    assert [r["name"] for r in listed] == HOSTILE
    ids = {r["keyword"]: r["id"] for r in listed}

    # Listings with hostile ids and titles (external data) through process_result; every IP gets inflow.
    proc = ResultProcessor(settings, state_redis(settings), Clock())
    now = time.time()
    market = ids["'; DROP TABLE ip_metadata; --"]
    item_ids = [d[:64] for d in DATA]
    for keyword, ip_id in ids.items():
        sources = item_ids if ip_id == market else ["base", "new 1", "new 2"]
        items = [{"source_id": s, "title": f"{keyword} {s}", "price": 1000, "status": "on_sale"} for s in sources]
        proc.apply(CrawlResult.parse(ip_id, f"t-{ip_id}-1", now - 120, items[:1]))   # the baseline
        proc.apply(CrawlResult.parse(ip_id, f"t-{ip_id}-2", now - 60, items))
    snapshots = {s.source_id: s.title for s in ItemSnapshot.select().where(ItemSnapshot.ip_id == market)}
    keyword = "'; DROP TABLE ip_metadata; --"
    assert snapshots == {s: f"{keyword} {s}" for s in item_ids}  # "ABC" and "abc", 🔥 and 🎉 stay two listings

    side = ReadSide(settings, state_redis(settings))
    for keyword, ip_id in ids.items():                   # `animetop ip show ID` (database, then Redis cache)
        for _ in range(2):
            code, out, err = call_cli("ip", "show", str(ip_id), "--format", "json")
            assert code == 0, err
            assert json.loads(out)["keyword"] == keyword and json.loads(out)["name"] == keyword
        assert side.ip_detail(ip_id)["series"][-1]["inflow"] >= 2
    code, out, err = call_cli("leaderboard", "--by", "inflow", "--limit", "100", "--format", "csv")
    assert code == 0, err
    assert sorted(r["keyword"] for r in csv.DictReader(io.StringIO(out))) == sorted(HOSTILE)
    board = json.loads(run_cli({**env, "DATABASE_URL": database_url}, "leaderboard", "--by", "inflow",
                               "--limit", "100", "--format", "json").stdout)
    assert sorted(r["keyword"] for r in board) == sorted(HOSTILE)

    code, out, err = call_cli("ip", "disable", str(ids["100%"]))
    assert code == 0 and "'100%'" in out
    assert IpMetadata.get_by_id(ids["100%"]).active is False
    assert IpMetadata.select().where(IpMetadata.active == False).count() == 1  # noqa: E712 - no LIKE '100%' match
    assert all_tables() <= set(database.get_tables())
    assert IpMetadata.select().count() == len(HOSTILE)


def test_keywords_with_control_characters_are_refused_clearly_and_nothing_is_stored(cli_settings, env,
                                                                                    database_url):
    from lib.scheduling.catalogue import Catalogue, CatalogueError
    from lib.core.redis_client import state_redis
    from lib.scheduling.schedule import ScheduleStore
    from models import IpMetadata

    catalogue = Catalogue(ScheduleStore(state_redis(cli_settings)), cli_settings)
    for keyword in CONTROL:
        bad = next(c for c in keyword if ord(c) < 32 or 127 <= ord(c) < 160)
        code, out, err = call_cli("ip", "add", keyword)
        assert code == 1 and out == ""
        assert "control characters" in err and f"U+{ord(bad):04X}" in err
        with pytest.raises(CatalogueError, match="control characters"):
            catalogue.add("fine", name=keyword)          # the display name too
    # Bytes that are not UTF-8 on a real command line arrive as lone surrogates: refused, not a traceback.
    result = subprocess.run([sys.executable, "-m", "lib.cli", "ip", "add", b"\xff\xfe-x"],
                            env={"PATH": os.environ.get("PATH", ""), **env, "DATABASE_URL": database_url},
                            capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 1 and "not valid Unicode" in result.stderr and "Traceback" not in result.stderr
    assert IpMetadata.select().count() == 0


def test_pool_texts_round_trip_unchanged_through_database_and_redis(cli_settings):
    from lib.text_pools.pool import PoolConsumer, PoolError, PoolFiller
    from lib.core.redis_client import state_redis
    from models import Content, Title

    settings = cli_settings
    texts = DATA + [d * 3 for d in DATA]
    lines = Path(settings.data_path) / "texts.jsonl"
    lines.parent.mkdir(parents=True, exist_ok=True)
    lines.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    for kind in ("titles", "contents"):                  # `animetop pool load KIND FILE --group 1 --batch 7`
        code, out, err = call_cli("pool", "load", kind, str(lines), "--group", "1", "--batch", "7")
        assert code == 0, err
    for kind in ("titles; DROP TABLE titles; --", "titles`", "Title", "__class__"):
        code, _, err = call_cli("pool", "load", kind, str(lines), "--group", "1", "--batch", "1")
        assert code == 2 and "unknown pool kind" in err

    client = state_redis(settings)
    used: list[int] = []
    consumer = PoolConsumer(lambda: client, settings, send_mark_used=lambda kind, group, ids: used.extend(ids))
    try:
        for kind, model in (("titles", Title), ("contents", Content)):
            assert PoolFiller(client, settings).fill(kind, 1).pushed == len(texts)
            popped = [consumer.pop(kind, 1).text for _ in texts]
            assert sorted(popped) == sorted(texts)
            assert sorted(r.text for r in model.select()) == sorted(texts)
        with pytest.raises(PoolError):
            consumer.pop("titles' OR 1=1 --", 1)
    finally:
        consumer.close()
    assert all_tables() <= set(database.get_tables())


def test_collection_task_ids_record_keys_and_rows_round_trip(cli_settings):
    from lib.collection.collector import DatabaseSink, add_task, find_task
    from models import CollectedRow, CollectionTask

    task_ids = [d for d in DATA if 0 < len(d) <= 100 and d.strip()]
    for task_id in task_ids:
        add_task(task_id, "octoparse", key_field="id")
    for task_id in task_ids:
        assert find_task(task_id).task_id == task_id
    code, out, err = call_cli("collect", "disable", "'; DROP TABLE ip_metadata; --")
    assert code == 0, err
    assert [t.task_id for t in CollectionTask.select().where(CollectionTask.enabled == False)] == [  # noqa: E712
        "'; DROP TABLE ip_metadata; --"]

    task = find_task("100%")
    rows = [{"id": d[:64], "title": d, "nested": {"v": [d]}} for d in DATA]
    assert DatabaseSink().write(task, rows) == len(rows)
    stored = {r.record_key: json.loads(r.data) for r in CollectedRow.select().where(CollectedRow.task == task.id)}
    assert stored == {r["id"]: r for r in rows}          # "abc"/"ABC", 🔥/🎉, é/é: distinct records
    assert DatabaseSink().write(task, rows) == len(rows)  # the same rows again: updated, not duplicated
    assert CollectedRow.select().count() == len(rows)
    assert all_tables() <= set(database.get_tables())


@pytest.mark.mysql
def test_mysql_tables_from_before_exact_columns_are_converted_by_db_init(tmp_path):
    """Tables created with the server's default (case- and emoji-folding) collation: `db init` converts the
    columns that identify things, so distinct keywords, item ids and record keys stop colliding."""
    need(MYSQL_URL, "MySQL/MariaDB")
    conn, name = mysql_admin(MYSQL_URL)
    with conn.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
        cur.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci")
        cur.execute(f"CREATE TABLE `{name}`.ip_metadata (id INT AUTO_INCREMENT PRIMARY KEY, keyword VARCHAR(200) "
                    "NOT NULL UNIQUE, display_name VARCHAR(200) NOT NULL, active TINYINT(1) NOT NULL, weight DOUBLE "
                    "NOT NULL, last_crawled_at DATETIME NULL, created_at DATETIME NOT NULL, updated_at DATETIME "
                    "NOT NULL)")
        cur.execute(f"INSERT INTO `{name}`.ip_metadata (keyword, display_name, active, weight, created_at, "
                    "updated_at) VALUES ('🔥', '🔥', 1, 1, NOW(), NOW())")
    from models import IpMetadata

    bind_database(MYSQL_URL)
    try:
        create_tables()
        with conn.cursor() as cur:
            cur.execute("SELECT TABLE_NAME, COLUMN_NAME, COLLATION_NAME FROM information_schema.COLUMNS "
                        "WHERE TABLE_SCHEMA = %s AND COLLATION_NAME LIKE 'utf8mb4%%bin'", (name,))
            exact = {(t, c) for t, c, _ in cur.fetchall()}
        assert exact == {("ip_metadata", "keyword"), ("item_snapshots", "source_id"), ("collection_tasks", "task_id"),
                         ("collected_rows", "record_key"), ("alert_deliveries", "channel")}
        now = naive_utc(time.time())
        for keyword in ("🎉", "ONE PIECE", "one piece", "one piece "):
            IpMetadata.create(keyword=keyword, display_name=keyword, created_at=now, updated_at=now)
        assert [ip.keyword for ip in IpMetadata.select().order_by(IpMetadata.id)] == [
            "🔥", "🎉", "ONE PIECE", "one piece", "one piece "]
        assert IpMetadata.get(IpMetadata.keyword == "one piece").keyword == "one piece"
        create_tables()                                  # safe to repeat
    finally:
        database.close()
        conn.close()


# -- no SQL built from strings, anywhere in the code ----------------------------------------------------------

#: Calls whose first argument is SQL text.
SQL_SINKS = {"execute_sql", "SQL", "raw", "RawQuery", "execute", "executemany", "executescript", "mogrify"}
#: Reviewed exceptions: (path, line text) of SQL built from constant identifiers only. Keep this empty if you can.
REVIEWED: set[tuple[str, str]] = set()


def _built_string(node: ast.AST) -> bool:
    """An f-string, ``"…".format(…)``, ``"…" % …`` or string concatenation."""
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("format",
                                                                                                 "format_map"):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mod, ast.Add)):
        return any(isinstance(side, (ast.Constant, ast.JoinedStr)) and not isinstance(getattr(side, "value", ""),
                                                                                        (int, float))
                   or _built_string(side) for side in (node.left, node.right))
    return False


def sql_built_from_strings(source: str, path: str = "<snippet>") -> list[str]:
    """Places where SQL text handed to a database call is built with f-strings, format or % (directly, or
    through a local variable assigned such a string)."""
    tree = ast.parse(source)
    built_names: dict[ast.AST, set[str]] = {}
    for scope in ast.walk(tree):
        if isinstance(scope, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)):
            names = set()
            for node in ast.walk(scope):
                if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    if _built_string(node.value) or isinstance(node, ast.AugAssign):
                        names |= {t.id for t in targets if isinstance(t, ast.Name)}
            built_names[scope] = names
    suspicious = set().union(*built_names.values()) if built_names else set()
    found = []
    lines = source.splitlines()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name not in SQL_SINKS:
            continue
        first = node.args[0]
        if _built_string(first) or (isinstance(first, ast.Name) and first.id in suspicious):
            line = lines[node.lineno - 1].strip()
            if (path, line) not in REVIEWED:
                found.append(f"{path}:{node.lineno}: {line}")
    return found


def test_the_scan_catches_sql_built_from_strings():
    bad = [
        "db.execute_sql(f\"SELECT * FROM ip_metadata WHERE keyword = '{kw}'\")",
        "peewee.SQL('keyword = %s' % kw)",
        "IpMetadata.raw('SELECT * FROM ip_metadata WHERE keyword = {}'.format(kw))",
        "cursor.execute('DELETE FROM titles WHERE id = ' + ident)",
        "def f(kw):\n    query = f'SELECT {kw}'\n    database.execute_sql(query)",
        "def f(kw):\n    query = 'SELECT '\n    query += kw\n    database.execute_sql(query)",
    ]
    for snippet in bad:
        assert sql_built_from_strings(snippet), snippet
    good = [
        "db.execute_sql('SELECT * FROM ip_metadata WHERE keyword = %s', (kw,))",
        "peewee.SQL('CHARACTER SET utf8mb4 COLLATE utf8mb4_bin')",
        "IpMetadata.select().where(IpMetadata.keyword == kw)",
        "pipe.execute()",
        "ctx = database.get_sql_context()\ndatabase.execute(ctx)",
        "logger.info('%s rows' % n)",
    ]
    for snippet in good:
        assert not sql_built_from_strings(snippet), snippet


def test_no_sql_is_built_from_strings_in_the_code_base():
    found = []
    for folder in ("lib", "models", "actors"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            found += sql_built_from_strings(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert found == [], "SQL built from strings (use Peewee's query builder or parameters):\n" + "\n".join(found)


# == 2. Credentials never reach logs or status output ==========================================================

class Secrets:
    """Credentials for every setting that takes them, each unique so a leak is unmistakable."""

    def __init__(self) -> None:
        tag = secrets.token_hex(6)
        self.redis_user, self.redis_pw = f"sec_{tag}", f"redisPW{tag}"
        self.db_user, self.db_pw = f"sec_{tag}", f"dbPW{tag}"
        self.proxy_pw, self.proxy_token = f"proxyPW{tag}", f"proxyTOKEN{tag}"
        self.hook_pw, self.ding_token = f"hookPW{tag}", f"dingTOKEN{tag}"
        self.slack_token = f"slackTOKEN{tag}0123456789"
        self.amqp_pw, self.api_pw = f"amqpPW{tag}", f"apiPW{tag}"

    def all(self) -> list[str]:
        return [self.redis_pw, self.db_pw, self.proxy_pw, self.proxy_token, self.hook_pw, self.ding_token,
                self.slack_token, self.amqp_pw, self.api_pw]

    def assert_absent(self, *texts: str) -> None:
        for text in texts:
            leaked = [s for s in self.all() if s in text]
            assert not leaked, f"secret(s) {leaked} leaked into:\n{text[-3000:]}"


@pytest.fixture
def creds():
    return Secrets()


@pytest.fixture
def redis_with_user(redis_server, creds):
    """A Redis user with a password on the test server (ACL), removed afterwards."""
    if not redis_server.startswith("redis://"):
        pytest.skip("needs Redis over TCP for a user with a password")
    admin = redis.Redis.from_url(redis_server)
    admin.execute_command("ACL", "SETUSER", creds.redis_user, "on", f">{creds.redis_pw}", "~*", "&*", "+@all")
    host = redis_server[len("redis://"):]
    yield f"redis://{creds.redis_user}:{creds.redis_pw}@{host}"
    admin.execute_command("ACL", "DELUSER", creds.redis_user)
    admin.close()


@pytest.fixture
def mysql_with_user(creds):
    """The test database, reachable by a MariaDB/MySQL user with a password, removed afterwards."""
    need(MYSQL_URL, "MySQL/MariaDB")
    conn, name = mysql_admin(MYSQL_URL)
    with conn.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
        cur.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
        for host in ("%", "localhost"):
            cur.execute("CREATE USER %s@%s IDENTIFIED BY %s", (creds.db_user, host, creds.db_pw))
            cur.execute(f"GRANT ALL PRIVILEGES ON `{name}`.* TO %s@%s", (creds.db_user, host))
    parts = urlsplit(MYSQL_URL)
    yield f"mysql://{creds.db_user}:{creds.db_pw}@{parts.hostname}:{parts.port or 3306}/{name}"
    with conn.cursor() as cur:
        for host in ("%", "localhost"):
            cur.execute("DROP USER IF EXISTS %s@%s", (creds.db_user, host))
    conn.close()


@pytest.fixture
def secret_env(env, creds, redis_with_user, mysql_with_user):
    """Every URL setting with credentials in it, pointing at real servers where one exists."""
    from .. import conftest

    return {
        **env,
        "REDIS_URL": f"{redis_with_user}/{conftest.STATE_DB}",
        "BROKER_URL": f"{redis_with_user}/{conftest.BROKER_DB}",
        "DATABASE_URL": mysql_with_user,
        "PROXY_URLS": f"http://puser:{creds.proxy_pw}@127.0.0.1:9,socks5://{creds.proxy_token}@127.0.0.1:9",
        "NOTIFY_WEBHOOK_URLS": f"http://hookuser:{creds.hook_pw}@127.0.0.1:9/hook,"
                               f"dingtalk+http://127.0.0.1:9/robot/send?access_token={creds.ding_token},"
                               f"slack+http://127.0.0.1:9/services/T000/B000/{creds.slack_token}",
        "COLLECT_API_PASSWORD": creds.api_pw,
    }


def test_settings_db_init_and_status_show_hosts_but_no_credentials(secret_env, creds):
    init = run_cli(secret_env, "db", "init")
    assert init.returncode == 0, init.stderr
    assert f"mysql://{creds.db_user}:***@127.0.0.1:3306/" in init.stdout
    shown = run_cli(secret_env, "settings")
    assert shown.returncode == 0, shown.stderr
    for redacted in (f"REDIS_URL=redis://{creds.redis_user}:***@127.0.0.1:",
                     f"DATABASE_URL=mysql://{creds.db_user}:***@",
                     "PROXY_URLS=http://puser:***@127.0.0.1:9,socks5://***@127.0.0.1:9", "access_token=***",
                     "/services/T000/B000/***", "http://hookuser:***@127.0.0.1:9/hook", "COLLECT_API_PASSWORD=***",
                     f"# broker:      redis://{creds.redis_user}:***@127.0.0.1:"):
        assert redacted in shown.stdout
    table, as_json = run_cli(secret_env, "status"), run_cli(secret_env, "status", "--format", "json")
    assert table.returncode == 0 and as_json.returncode == 0, table.stderr + as_json.stderr
    assert json.loads(as_json.stdout)["broker"].startswith(f"redis://{creds.redis_user}:***@127.0.0.1:")
    creds.assert_absent(init.stdout, init.stderr, shown.stdout, shown.stderr, table.stdout, table.stderr,
                        as_json.stdout, as_json.stderr)


def test_errors_about_unreachable_or_refusing_services_carry_no_credentials(secret_env, creds):
    runs = [
        # Redis down (nothing listens on port 1): status fails with the reason, not the password
        run_cli({**secret_env, "REDIS_URL": f"redis://u:{creds.redis_pw}@127.0.0.1:1/8",
                 "BROKER_URL": f"redis://u:{creds.redis_pw}@127.0.0.1:1/9"}, "status"),
        # the database refuses the password
        run_cli({**secret_env, "DATABASE_URL": secret_env["DATABASE_URL"].replace(creds.db_pw, creds.api_pw)},
                "db", "init"),
        # RabbitMQ refuses (or is not there): enqueue fails
        run_cli({**secret_env, "BROKER_URL": f"amqp://nobody:{creds.amqp_pw}@127.0.0.1:5672/%2F"},
                "enqueue", "ping", '{"note": "x"}'),
        # bad settings are named without echoing the secret
        run_cli({**secret_env, "PROXY_URLS": f"ftp://puser:{creds.proxy_pw}@127.0.0.1:21"}, "settings"),
        run_cli({**secret_env, "NOTIFY_WEBHOOK_URLS": f"ftp://h/x?token={creds.ding_token}"}, "settings"),
        run_cli({**secret_env, "COLLECT_API_URL": f"http://api:{creds.api_pw}@127.0.0.1:8765"}, "settings"),
        run_cli({**secret_env, "DASHBOARD_URL": f"https://{creds.hook_pw}@dash.example"}, "settings"),
    ]
    for result in runs:
        assert result.returncode != 0, result.stdout
        creds.assert_absent(result.stdout, result.stderr)
    assert "127.0.0.1:1" in runs[0].stderr                            # the host is there to diagnose with
    assert "Access denied" in runs[1].stderr
    assert "bad setting PROXY_URLS: proxy 'ftp://puser:***@127.0.0.1:21'" in runs[3].stderr
    assert "bad setting COLLECT_API_URL: must not carry credentials" in runs[5].stderr
    assert "COLLECT_API_USERNAME and COLLECT_API_PASSWORD" in runs[5].stderr
    assert "bad setting DASHBOARD_URL" in runs[6].stderr


def test_worker_logs_dead_letter_reasons_and_status_carry_no_credentials(secret_env, creds, tmp_path):
    """A real worker process (`animetop run worker`, DEBUG logging) handles messages that quote credentialed
    URLs: its log lines and the dead-letter reasons `status` shows are redacted."""
    from dramatiq import Message

    from lib.messaging.broker import build_broker
    from lib.messaging.dead_letters import DeadLetters

    env = {**secret_env, "LOG_LEVEL": "DEBUG", "WORKER_PROCESSES": "1", "WORKER_THREADS": "2",
           "WORKER_SHUTDOWN_TIMEOUT": "5s", "METRICS_PORT": str(20000 + os.getpid() % 20000)}
    assert run_cli(env, "db", "init").returncode == 0
    settings = load_settings(env)
    broker = build_broker(settings)
    leaky = f"{secret_env['REDIS_URL']} and {secret_env['DATABASE_URL']}"
    log = (tmp_path / "worker.log").open("w+")
    worker = subprocess.Popen([sys.executable, "-m", "lib.cli", "run", "worker"], cwd=ROOT, stdout=log,
                              stderr=subprocess.STDOUT, env={"PATH": os.environ.get("PATH", ""), **env})
    try:
        broker.enqueue(Message(queue_name="maintenance", actor_name="ping", args=(), kwargs={"note": leaky},
                               options={}))
        # arguments that do not fit ping(note: str): dead-lettered, and the reason quotes the value
        broker.enqueue(Message(queue_name="maintenance", actor_name="ping", args=(), kwargs={"note": [leaky]},
                               options={}))
        letters = DeadLetters.for_broker(broker, broker.reasons)
        dead = wait_for(lambda: letters.list("maintenance"), timeout=60, what="the dead letter")
        wait_for(lambda: "pong" in (tmp_path / "worker.log").read_text(), timeout=30, what="the pong line")
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
        log.close()
    output = (tmp_path / "worker.log").read_text()
    assert "pong" in output and f"redis://{creds.redis_user}:***@127.0.0.1" in output
    assert f"mysql://{creds.db_user}:***@127.0.0.1" in output
    assert "must be str" in dead[0].reason and f"{creds.redis_user}:***@" in dead[0].reason
    table, as_json = run_cli(env, "status"), run_cli(env, "status", "--format", "json")
    listed = run_cli(env, "deadletters", "list", "--format", "json")
    assert "must be str" in table.stdout and "must be str" in json.loads(as_json.stdout)["recent_errors"][0]["reason"]
    creds.assert_absent(output, dead[0].reason, table.stdout, table.stderr, as_json.stdout, listed.stdout)
    broker.close()


class Receiver:
    """A webhook receiver on loopback: /hook wants HTTP Basic auth, /robot/send a token."""

    def __init__(self, user: str, password: str, token: str) -> None:
        receiver = self
        self.hits: list[tuple[str, str | None]] = []
        expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.hits.append((self.path, self.headers.get("Authorization")))
                ok = (self.path == "/hook" and self.headers.get("Authorization") == expected) or \
                    self.path == f"/robot/send?access_token={token}"
                self.send_response(200 if ok else 401)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_alert_channels_are_stored_logged_and_listed_without_their_secrets(db, database_url, env, creds, caplog):
    from lib.alerts.notify import SENT, Notifier
    from lib.core.redis_client import state_redis
    from models import AlertDelivery, IpAlert

    receiver = Receiver("hookuser", creds.hook_pw, creds.ding_token)
    try:
        base = f"127.0.0.1:{receiver.port}"
        urls = [f"http://hookuser:{creds.hook_pw}@{base}/hook",
                f"dingtalk+http://{base}/robot/send?access_token={creds.ding_token}",
                f"slack+http://127.0.0.1:9/services/T000/B000/{creds.slack_token}"]
        settings = load_settings({**env, "DATABASE_URL": database_url, "NOTIFY_RETRIES": "0", "NOTIFY_TIMEOUT": "3s",
                                  "NOTIFY_WEBHOOK_URLS": ",".join(urls)})
        use_settings(settings)
        alert = IpAlert.create(ip_id=1, rule="outflow_surge", hour_bucket=naive_utc(1_800_000_000), value=42,
                               threshold=20, message="outflow 42", created_at=naive_utc(time.time()))
        notifier = Notifier(settings, state_redis(settings))
        with caplog.at_level("DEBUG"):
            outcomes = [notifier.deliver(alert.id, i, attempt=1) for i in range(3)]
            code, out, err = call_cli("alerts", "list", "--format", "json")
            test_code, test_out, test_err = call_cli("alerts", "test", settings.notify_webhook_urls[1])
        assert outcomes == [SENT, SENT, "failed"]
        assert [path for path, _ in receiver.hits][:2] == ["/hook", f"/robot/send?access_token={creds.ding_token}"]
        assert receiver.hits[0][1] is not None              # the password went as HTTP Basic auth, not to DNS
        assert code == 0 and test_code == 0, err + test_err
        channels = sorted(d.channel for d in AlertDelivery.select())
        assert channels == sorted([f"http://hookuser:***@{base}/hook", f"http://{base}/robot/send?access_token=***",
                                   "http://127.0.0.1:9/services/T000/B000/***"])
        assert sorted(json.loads(out)[0]["deliveries"]) == channels
        creds.assert_absent(out, err, test_out, test_err, caplog.text,
                            "\n".join(r.getMessage() for r in caplog.records), "\n".join(channels))
    finally:
        receiver.stop()
        use_settings(None)


def test_proxy_credentials_stay_out_of_logs(creds, caplog):
    from lib.crawling.proxies import ProxyRotator, health_check
    from lib.crawling.page_fetch import ErrorKind

    proxies = (f"http://puser:{creds.proxy_pw}@127.0.0.1:9", f"socks5://{creds.proxy_token}@127.0.0.1:9",
               f"https://puser:{creds.proxy_pw}@127.0.0.1:9")
    with caplog.at_level("DEBUG"):
        assert health_check(proxies[0], "http://127.0.0.1:9/", timeout=2) is False   # a real, failing check
        rotator = ProxyRotator(proxies, switch_after=1, cooldown=0, check_url="http://x",
                               check=lambda proxy, url: proxy == proxies[2])
        assert rotator.record(ErrorKind.TIMEOUT) == proxies[2]
        rotator.check = lambda proxy, url: False
        assert rotator.record(ErrorKind.BLOCKED) is False
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "http://puser:***@127.0.0.1:9" in text and "https://puser:***@127.0.0.1:9" in text
    creds.assert_absent(text)


def test_log_lines_and_tracebacks_are_redacted_by_the_process_formatter():
    from lib.app import LOG_FORMAT, RedactingFormatter

    import logging

    formatter = RedactingFormatter(logging.Formatter(LOG_FORMAT))
    try:
        raise ConnectionError("cannot reach amqp://user:s3cr3tpw@rabbit:5672/%2F")
    except ConnectionError:
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "connecting to %s", ("redis://:s3cr3tpw@h:6379/1",),
                                   sys.exc_info())
    line = formatter.format(record)
    assert "s3cr3tpw" not in line
    assert "amqp://user:***@rabbit:5672/%2F" in line and "redis://:***@h:6379/1" in line and "Traceback" in line


@pytest.mark.parametrize("url, shown", [
    ("mysql://u:secret@h:3306/db", "mysql://u:***@h:3306/db"),
    ("redis://:secret@h:6379/1", "redis://:***@h:6379/1"),
    ("https://secret@h/x", "https://***@h/x"),                       # a token given as the user name
    ("https://oapi.dingtalk.com/robot/send?access_token=secret&x=1",
     "https://oapi.dingtalk.com/robot/send?access_token=***&x=1"),
    ("slack+https://hooks.slack.com/services/T0/B0/abcdefgh12345678",
     "slack+https://hooks.slack.com/services/T0/B0/***"),
    ("https://h/api?api_key=secret&sig=secret", "https://h/api?api_key=***&sig=***"),
    ("redis://h:6379/1", "redis://h:6379/1"),
    ("https://jp.mercari.com/search?keyword=%E9%AC%BC&status=on_sale&author=x",    # nothing secret here
     "https://jp.mercari.com/search?keyword=%E9%AC%BC&status=on_sale&author=x"),
    ("https://h/x?accessToken=secret&key=secret&client_secret=secret",
     "https://h/x?accessToken=***&key=***&client_secret=***"),
    ("redis://user:secr", "redis://user:***"),                      # cut short in a truncated message
    ("http://[::1]:8080/x", "http://[::1]:8080/x"),
    ("unix:///tmp/animetop-test-redis-1a2b3c4d5e6f7a8b/redis.sock?db=1",
     "unix:///tmp/animetop-test-redis-1a2b3c4d5e6f7a8b/redis.sock?db=1"),
    ("sqlite:////var/lib/animetop/animetop.sqlite3", "sqlite:////var/lib/animetop/animetop.sqlite3"),
])
def test_redact_url(url, shown):
    assert redact_url(url) == shown
    assert redact_text(f"error: {url} failed") == f"error: {shown} failed"


# == 3. msgpack decoding has limits ===========================================================================

def _array32(n: int) -> bytes:
    return b"\xdd" + struct.pack(">I", n)


#: Crafted payloads: name → (bytes, words of the reason).
HOSTILE_PAYLOADS = {
    "array header claiming 2**31 elements": (_array32(2**31), "declared length"),
    "map header claiming 2**32-1 entries": (b"\xdf" + struct.pack(">I", 2**32 - 1), "declared length"),
    "str header claiming 2**31 bytes": (b"\xdb" + struct.pack(">I", 2**31) + b"x" * 16, "declared length"),
    "bin header claiming 2**31 bytes": (b"\xc6" + struct.pack(">I", 2**31) + b"x" * 16, "declared length"),
    "ext header claiming 2**31 bytes": (b"\xc9" + struct.pack(">I", 2**31) + b"\x01", "declared length"),
    "ext type": (b"\xd4\x01\x01", "ext types"),
    "nested 60,000 deep": (b"\x91" * 60_000 + b"\xc0", "nested too deeply"),
    "a map nested 5,000 deep": (b"\x81\xa1k" * 5_000 + b"\xc0", "nested too deeply"),
    "60,000 empty arrays": (_array32(60_000) + b"\x90" * 60_000, "arrays and maps"),
    "10,000 empty maps as a map's values": (b"\xde" + struct.pack(">H", 10_000) + b"".join(
        b"\xa4" + f"{i:04d}".encode() + b"\x80" for i in range(10_000)), "arrays and maps"),
}


@pytest.mark.parametrize("name", list(HOSTILE_PAYLOADS))
def test_hostile_msgpack_is_refused_at_once_with_little_memory(name):
    from lib.messaging.encoder import MsgpackEncoder

    payload, words = HOSTILE_PAYLOADS[name]
    encoder = MsgpackEncoder(max_bytes=65536)
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(DecodeError) as e:
            encoder.decode(payload)
        elapsed = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert words in str(e.value) and str(e.value).startswith("not valid msgpack")
    assert elapsed < 1.0, f"{elapsed:.2f}s"
    assert peak < 8 * 1024 * 1024, f"{peak / 2**20:.1f} MB"


def test_a_full_size_message_of_empty_containers_stays_small():
    """16 MB (the default MESSAGE_MAX_BYTES) of empty arrays would be over 1 GB of Python lists and seconds of
    CPU; the container cap stops it early."""
    from lib.messaging.encoder import MsgpackEncoder

    encoder = MsgpackEncoder()
    n = encoder.max_bytes - 16
    payload = _array32(n) + b"\x90" * n
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(DecodeError, match="arrays and maps"):
            encoder.decode(payload)
        elapsed, peak = time.perf_counter() - started, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert elapsed < 3.0 and peak < 64 * 1024 * 1024, (elapsed, peak / 2**20)


def test_real_messages_are_far_from_the_limits():
    from bench.encoding import crawl_result, message_of
    from lib.messaging.encoder import MsgpackEncoder

    encoder = MsgpackEncoder()
    data = message_of(crawl_result(items=5000))      # five times a full crawl (10 pages of ~120)
    assert encoder.decode(encoder.encode(data)) == data
    deep = {"a": [{"b": [[[{"c": "鬼滅の刃"}]]]}] * 50}  # nested rows from an export API
    message = message_of(deep)
    assert encoder.decode(encoder.encode(message)) == message


def test_hostile_messages_are_dead_lettered_with_the_reason_by_a_real_worker(env, start_worker):
    from lib.messaging.broker import build_broker
    from lib.messaging.dead_letters import DeadLetters
    from lib.core.redis_client import state_redis

    settings = load_settings({**env, "MESSAGE_MAX_BYTES": "65536"})
    use_settings(settings)
    broker = build_broker(settings)
    dramatiq.set_broker(broker)
    seen = state_redis(settings)

    @dramatiq.actor(broker=broker, queue_name="work")
    def count(n: int) -> None:
        seen.rpush("seen", n)

    count.send(1)
    payloads = dict(HOSTILE_PAYLOADS)
    payloads["70,000 bytes"] = b"\x00" * 70_000, "over MESSAGE_MAX_BYTES"
    for payload, _ in payloads.values():
        broker.do_enqueue("work", str(uuid.uuid4()), payload)
    count.send(2)
    with pytest.raises(Exception, match="over MESSAGE_MAX_BYTES"):    # refused when sent, too
        count.send_with_options(args=(3,), blob="x" * 70_000)
    start_worker(broker, threads=2)
    letters = DeadLetters.for_broker(broker, broker.reasons)
    dead = wait_for(lambda: len(letters.list("work")) == len(payloads) and letters.list("work"), timeout=60,
                    what="every hostile payload dead-lettered")
    wait_for(lambda: sorted(int(x) for x in seen.lrange("seen", 0, -1)) == [1, 2], what="the valid messages")
    reasons = [d.reason for d in dead]
    for name, (_, words) in payloads.items():
        assert sum(words in r for r in reasons) >= 1, (name, reasons)
    assert all("undecodable message" in r for r in reasons)
    count.send(4)                                                       # the worker is still up
    wait_for(lambda: b"4" in seen.lrange("seen", 0, -1), what="a message after the hostile ones")
    broker.close()
    use_settings(None)


# == 4. Chromium runs sandboxed unless CHROMIUM_NO_SANDBOX is on ================================================

def test_the_launch_arguments_turn_the_sandbox_off_only_when_asked_and_never_carry_proxy_credentials():
    from lib.crawling.driver import chromium_args, proxy_credentials

    assert "--no-sandbox" not in chromium_args(no_sandbox=False)
    assert "--no-sandbox" in chromium_args(no_sandbox=True)
    assert not any("sandbox" in a for a in chromium_args(no_sandbox=False, proxy="http://127.0.0.1:3128"))
    args = chromium_args(no_sandbox=False, proxy="http://puser:p%40ss@proxy.internal:3128")
    assert "--proxy-server=http://proxy.internal:3128" in args and not any("puser" in a or "p%40ss" in a for a in args)
    assert proxy_credentials("http://puser:p%40ss@proxy.internal:3128") == ("puser", "p@ss")
    assert proxy_credentials("socks5://token@proxy.internal:1080") == ("token", "")
    assert proxy_credentials("http://proxy.internal:3128") is None
    assert load_settings({}).chromium_no_sandbox is False            # sandboxed by default


def _process(pid: int) -> dict:
    """What /proc says about a process: its command line, seccomp mode and user namespace."""
    status = Path(f"/proc/{pid}/status").read_text()
    return {"cmdline": Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"),
            "seccomp": next(line.split()[1] for line in status.splitlines() if line.startswith("Seccomp:")),
            "userns": os.readlink(f"/proc/{pid}/ns/user")}


def chromium_processes(browser_pid: int) -> tuple[dict, list[dict]]:
    """The browser process and its renderers."""
    renderers = []
    for pid in descendants(browser_pid):
        try:
            info = _process(pid)
        except OSError:
            continue
        if "--type=renderer" in info["cmdline"]:
            renderers.append(info)
    return _process(browser_pid), renderers


@pytest.mark.skipif(os.geteuid() != 0, reason="Chromium refuses its sandbox only as root")
def test_as_root_without_the_setting_start_up_fails_clearly_naming_it(chromium, env):
    import asyncio

    from lib.crawling.driver import Browser, DriverError

    # What Chromium itself does as root with its sandbox on: refuse, with a message that names no setting of ours.
    raw = subprocess.run([chromium, "--headless", "--disable-gpu", "--dump-dom", "about:blank"],
                         capture_output=True, text=True, timeout=60)
    assert "Running as root without --no-sandbox is not supported" in raw.stderr
    with pytest.raises(DriverError) as e:
        asyncio.run(Browser.launch(chromium, no_sandbox=False))
    assert "CHROMIUM_NO_SANDBOX=true" in str(e.value) and "unprivileged user" in str(e.value)
    started = time.monotonic()
    run = run_cli({**env, "CHROMIUM_PATH": chromium}, "run", "crawler")        # the crawler process type
    assert run.returncode == 2 and time.monotonic() - started < 30
    assert "CHROMIUM_NO_SANDBOX=true" in run.stderr and "Traceback" not in run.stderr


SANDBOXED_SCRIPT = r"""
import asyncio, json, sys
from lib.crawling.driver import Browser

async def main():
    browser = await Browser.launch(sys.argv[1], no_sandbox=False)
    try:
        tab = await browser.new_tab("^$", block_resources=True)
        nav = await tab.goto("data:text/html,<p>inside the sandbox</p>", 30)
        print(json.dumps({"pid": browser.pid, "text": nav.text}), flush=True)
        sys.stdin.readline()                     # the test reads /proc meanwhile
    finally:
        await browser.close()

asyncio.run(main())
"""


def test_as_an_unprivileged_user_chromium_runs_sandboxed(chromium):
    """The default (CHROMIUM_NO_SANDBOX off), for real: the crawler's driver as user nobody launches Chromium
    without --no-sandbox, and its renderers run under seccomp-bpf in their own user namespace."""
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running Chromium as an unprivileged user needs setpriv")
        # The venv's interpreter may sit under /root; the system one with the venv's packages is readable.
        python = shutil.which("python3", path="/usr/bin:/usr/local/bin")
        if python is None or subprocess.run([python, "-c", "import sys; print(sys.version_info[:2])"],
                                            capture_output=True, text=True).stdout.strip() != str(sys.version_info[:2]):
            pytest.skip("no system Python of this version to run as an unprivileged user")
        command = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", python]
    else:
        command = [sys.executable]
    site = next(p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir())
    env = {"PATH": os.environ.get("PATH", ""), "HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1",
           "PYTHONPATH": f"{ROOT}{os.pathsep}{site}"}
    child = subprocess.Popen([*command, "-c", SANDBOXED_SCRIPT, chromium], cwd="/tmp", env=env, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = child.stdout.readline()
        if not line:
            error = child.stderr.read()
            if "No usable sandbox" in error or "namespace" in error.lower():
                pytest.skip(f"this machine gives Chromium no sandbox: {error.strip()[-300:]}")
            raise AssertionError(f"the sandboxed Chromium did not start:\n{error[-3000:]}")
        started = json.loads(line)
        browser, renderers = chromium_processes(started["pid"])
        assert started["text"] == "inside the sandbox"
        assert "--no-sandbox" not in browser["cmdline"]
        assert renderers, "no renderer process found"
        for renderer in renderers:
            assert "--no-sandbox" not in renderer["cmdline"]
            assert renderer["seccomp"] == "2", renderer                 # seccomp-bpf filter on
            assert renderer["userns"] != browser["userns"], renderer    # namespace sandbox
    finally:
        child.stdin.write("\n")
        child.stdin.close()
        child.wait(timeout=60)


def test_with_the_setting_on_chromium_runs_unsandboxed_and_proxy_credentials_go_over_cdp(chromium, creds, caplog):
    """CHROMIUM_NO_SANDBOX on, as the crawler runs it: --no-sandbox on the command line, renderers without
    seccomp in the browser's namespace. Through an authenticating proxy, the password is in neither the
    command line (readable by every local user) nor the logs, and still reaches the proxy."""
    import asyncio

    from lib.crawling.browsers import BrowserManager
    from lib.crawling.driver import Browser
    from lib.crawling.page_fetch import fetch_page, search_url
    from lib.standins.simulator import MarketSimulator

    if os.geteuid() != 0:
        pytest.skip("as root only: an unprivileged run is covered by the sandboxed test")
    sim = MarketSimulator(speed=0).start()
    proxy = ForwardProxy("puser", creds.proxy_pw)
    good = f"http://puser:{creds.proxy_pw}@127.0.0.1:{proxy.port}"
    wrong = f"http://puser:{creds.api_pw}@127.0.0.1:{proxy.port}"

    async def crawl_through(proxy_url: str):
        manager = BrowserManager(lambda p: Browser.launch(chromium, no_sandbox=True, proxy=p),
                                 api_pattern=r"/v2/entities:search", block_resources=True, max_pages=1,
                                 max_crawls=10, proxy=proxy_url)
        try:
            async with manager.tab() as tab:
                seen = chromium_processes(manager._current.browser.pid)
                try:
                    page = await fetch_page(tab, search_url(sim.url, "鬼滅の刃", "on_sale", 1), sim.url, timeout=20,
                                            first_page=False)
                except Exception as e:  # noqa: BLE001 - the wrong password's failure is the point
                    page = e
                return page, seen, chromium_processes(manager._current.browser.pid)
        finally:
            await manager.close()

    try:
        with caplog.at_level("INFO"):
            page, (browser, _), (_, renderers) = asyncio.run(crawl_through(good))
            failed, _, _ = asyncio.run(crawl_through(wrong))
    finally:
        proxy.stop()
        sim.stop()
    assert not isinstance(page, Exception) and len(page.items) > 0, page
    assert proxy.challenged >= 1 and proxy.requests >= 2               # 407 answered over CDP, then through
    assert isinstance(failed, Exception)                                # a wrong password fails, not loops
    assert "--no-sandbox" in browser["cmdline"]
    assert f"--proxy-server=http://127.0.0.1:{proxy.port}" in browser["cmdline"]
    assert renderers and all(r["seccomp"] == "0" and r["userns"] == browser["userns"] for r in renderers)
    assert f"proxy http://puser:***@127.0.0.1:{proxy.port}" in caplog.text
    creds.assert_absent(browser["cmdline"], *(r["cmdline"] for r in renderers), caplog.text,
                        "\n".join(r.getMessage() for r in caplog.records))
