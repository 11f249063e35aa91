"""Hostile text round-trips byte for byte: keywords, titles, pool texts, task ids and record keys go through the
CLI, the catalogue, the read side, the pool and the collector and come back unchanged, on SQLite and
MariaDB/MySQL; control characters in keywords are refused clearly."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lib.core.clock import Clock, naive_utc
from lib.core.db import bind_database, database
from lib.core.settings import load_settings, use_settings
from lib.market.schema import create_tables

from ..conftest import MYSQL_URL, need
from ..helpers import recreate_mysql_database, run_cli
from .conftest import call_cli

ROOT = Path(__file__).resolve().parents[2]


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
    from lib.core.redis_client import state_redis
    from lib.market.processing import CrawlResult, ResultProcessor
    from lib.market.read_side import ReadSide
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
    from lib.core.redis_client import state_redis
    from lib.scheduling.catalogue import Catalogue, CatalogueError
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
    from lib.core.redis_client import state_redis
    from lib.text_pools.pool import PoolConsumer, PoolError, PoolFiller
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


#: Hostile words a character list keeps as aliases: each has a letter or digit and none is another's word to the
#: matcher (which reads 'a\\b' and 'a\u200bb' alike, or 'ONE PIECE' and 'one piece': those are refused instead).
HOSTILE_ALIASES = [
    "'; DROP TABLE ip_characters; --", "Robert'); DROP TABLE ip_metadata;--", "' OR '1'='1", "100%", "a\\b",
    '鬼滅の刃 "x"', "it's 100% \"real\"; --", "`ip_characters`", "[x]", "$1", "?y", ":name", "%s", "%(x)s", "{0}",
    "@@version", "/* c */ x", "-- c", "#c", "𠮷野家", "ｳﾏ娘", "e\u0301", "ß", "ss", "\u202eabc", "\u3000全角空白\u3000",
    "trailing space ", "line\u2028sep", "\ufeffbom", "👨‍👩‍👧 家族", "ONE PIECE",
]


def test_hostile_character_names_and_aliases_round_trip(cli_settings, env, database_url, tmp_path):
    """Names and aliases with quotes, SQL, LIKE wildcards, format strings, emoji, bidirectional and zero-width
    characters go in through ``ip characters add`` and ``import`` and come out of ``export`` (a real process) and
    ``characters_for_ip`` byte for byte; control characters and words the matcher cannot use are refused."""
    from lib.segments.character_lists import characters_for_ip
    from models import IpCharacter

    code, out, err = call_cli("ip", "add", "'; DROP TABLE ip_characters; --")
    assert code == 0, err
    ip = int(out.split()[2].rstrip(":"))
    # a name of each hostile keyword (cut to the longest name), made distinct by its number
    names = [f"{h[:90]} キャラ{i}" for i, h in enumerate(HOSTILE)]
    listed = [{"name": n, "aliases": [HOSTILE_ALIASES[i]] if i < len(HOSTILE_ALIASES) else []}
              for i, n in enumerate(names)]
    file = tmp_path / "characters.json"
    file.write_text(json.dumps(listed, ensure_ascii=False), encoding="utf-8")
    code, out, err = call_cli("ip", "characters", str(ip), "import", str(file))
    assert code == 0, err
    exported = run_cli({**env, "DATABASE_URL": database_url}, "ip", "characters", str(ip), "export")
    assert exported.returncode == 0, exported.stderr
    assert json.loads(exported.stdout) == listed
    assert [(c.name, list(c.aliases)) for c in characters_for_ip(ip)] == [(e["name"], e["aliases"]) for e in listed]

    # one by one through the command line (`--alias=` takes words that start with a dash)
    other = int(call_cli("ip", "add", "100%")[1].split()[2].rstrip(":"))
    for name, alias in zip(names[:8], HOSTILE_ALIASES[:8]):
        code, _, err = call_cli("ip", "characters", str(other), "add", name, f"--alias={alias}", "--alias=-x" + name)
        assert code == 0, err
    code, out, _ = call_cli("ip", "characters", str(other), "--format", "json")
    assert [(r["name"], r["aliases"]) for r in json.loads(out)] == [
        (n, [a, "-x" + n]) for n, a in zip(names[:8], HOSTILE_ALIASES[:8])]
    code, out, err = call_cli("ip", "characters", str(other), "remove", names[0])
    assert code == 0 and repr(names[0]) in out
    assert IpCharacter.select().where(IpCharacter.ip_id == other).count() == 7
    assert IpCharacter.select().where(IpCharacter.ip_id == ip).count() == len(HOSTILE)  # no LIKE, no injection

    for word in [*CONTROL, "%", "_%", "🔥", "\u3000", "one piece", "ONE  PIECE"]:
        code, out, err = call_cli("ip", "characters", str(ip), "add", "新キャラ", f"--alias={word}")
        assert code == 1 and out == "" and "Traceback" not in err, word
        assert "control characters" in err or "no letter or digit" in err or "the same word" in err, err
    assert IpCharacter.select().where(IpCharacter.ip_id == ip).count() == len(HOSTILE)
    assert all_tables() <= set(database.get_tables())


@pytest.mark.mysql
def test_mysql_tables_from_before_exact_columns_are_converted_by_db_init(tmp_path):
    """Tables created with the server's default (case- and emoji-folding) collation: `db init` converts the
    columns that identify things, so distinct keywords, item ids and record keys stop colliding."""
    need(MYSQL_URL, "MySQL/MariaDB")
    conn, name = recreate_mysql_database(MYSQL_URL, collate="utf8mb4_general_ci")
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{name}`.ip_metadata (id INT AUTO_INCREMENT PRIMARY KEY, keyword VARCHAR(200) "
                    "NOT NULL UNIQUE, display_name VARCHAR(200) NOT NULL, active TINYINT(1) NOT NULL, weight DOUBLE "
                    "NOT NULL, last_crawled_at DATETIME NULL, created_at DATETIME NOT NULL, updated_at DATETIME "
                    "NOT NULL)")
        cur.execute(f"INSERT INTO `{name}`.ip_metadata (keyword, display_name, active, weight, created_at, "
                    "updated_at) VALUES ('🔥', '🔥', 1, 1, NOW(), NOW())")
    from models import ALL_MODELS, IpMetadata
    from models.base import ExactCharField

    bind_database(MYSQL_URL)
    try:
        create_tables()
        with conn.cursor() as cur:
            cur.execute("SELECT TABLE_NAME, COLUMN_NAME, COLLATION_NAME FROM information_schema.COLUMNS "
                        "WHERE TABLE_SCHEMA = %s AND COLLATION_NAME LIKE 'utf8mb4%%bin'", (name,))
            exact = {(t, c) for t, c, _ in cur.fetchall()}
        declared = {(model._meta.table_name, field.column_name) for model in ALL_MODELS
                    for field in model._meta.sorted_fields if isinstance(field, ExactCharField)}
        assert exact == declared
        assert {("ip_metadata", "keyword"), ("collection_tasks", "task_id"),
                ("collected_rows", "record_key"), ("alert_deliveries", "channel")} <= declared
        # listing ids are bytes (models.base.ListingIdField): VARBINARY, compared byte for byte with no collation
        with conn.cursor() as cur:
            cur.execute("SELECT TABLE_NAME, COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s "
                        "AND DATA_TYPE = 'varbinary' AND COLLATION_NAME IS NULL", (name,))
            binary = {(t, c) for t, c in cur.fetchall()}
        assert {("item_snapshots", "source_id"), ("listing_sightings", "source_id"), ("listing_events", "source_id"),
                ("listing_segments", "source_id")} <= binary
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
