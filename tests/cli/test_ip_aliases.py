"""An IP's aliases (docs/operating/ips.md, "Aliases") on SQLite and MariaDB: given with ``animetop ip add --alias``,
changed with ``animetop ip aliases ID``, refused with a reason and nothing lost, carried in the crawl message the
scheduler sends, and the columns an existing database gains with ``animetop db init``."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout

import pytest

from lib import cli
from lib.core.clock import FrozenClock
from lib.core.db import database
from lib.core.redis_client import state_redis
from lib.core.settings import load_settings, use_settings
from lib.messaging.queues import CRAWL
from lib.scheduling.tick import Scheduler
from models import CrawlSearchTotal, IpMetadata


@pytest.fixture
def cli_env(db, database_url, env):
    values = {**env, "DATABASE_URL": database_url}
    use_settings(load_settings(values))
    yield values
    use_settings(None)


def animetop(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def aliases(ip: int) -> list[str]:
    code, out, err = animetop("ip", "aliases", str(ip), "--format", "json")
    assert code == 0, err
    return json.loads(out)["aliases"]


def test_aliases_given_changed_and_refused(cli_env):
    code, out, err = animetop("ip", "add", "呪術廻戦", "--alias", "呪術", "--alias=jujutsu kaisen")
    assert code == 0, err
    ip = int(out.split()[2].rstrip(":"))
    assert "aliases ['呪術', 'jujutsu kaisen']" in out
    assert aliases(ip) == ["呪術", "jujutsu kaisen"]
    assert animetop("ip", "aliases", str(ip))[1] == f"IP {ip} ('呪術廻戦'): 呪術, jujutsu kaisen\n"

    assert animetop("ip", "aliases", str(ip), "--alias", "JJK", "--remove-alias", "ジュジュツ")[0] == 1  # no such
    assert animetop("ip", "aliases", str(ip), "--alias", "JJK", "--remove-alias", "じゅじゅつ")[0] == 1
    assert aliases(ip) == ["呪術", "jujutsu kaisen"]  # a refused change changes nothing
    code, out, err = animetop("ip", "aliases", str(ip), "--alias", "JJK", "--remove-alias", "呪術")
    assert code == 0, err
    assert aliases(ip) == ["jujutsu kaisen", "JJK"]

    for bad, reason in [([""], "empty"), (["x" * 101], "at most 100"), (["呪"], "fewer than 2"),
                        (["じゅじゅ", "ジュジュ"], "reads as"), (["呪術廻戦"], "keyword"),
                        (["a\tb"], "control characters"), (["ok alias", ""], "empty")]:
        code, out, err = animetop("ip", "aliases", str(ip), *(f"--alias={b}" for b in bad))
        assert code == 1 and reason in err and out == "", (bad, err)
        assert aliases(ip) == ["jujutsu kaisen", "JJK"]
    # one it has already, in another spelling that reads alike: kept as it was
    assert animetop("ip", "aliases", str(ip), "--alias", "ＪＪＫ")[0] == 0
    assert aliases(ip) == ["jujutsu kaisen", "JJK"]
    code, _, err = animetop("ip", "add", "鬼滅の刃", "--alias", "")
    assert code == 1 and "empty" in err
    assert [ip.keyword for ip in IpMetadata.select()] == ["呪術廻戦"]  # not added

    code, out, _ = animetop("ip", "list", "--format", "json")
    assert [row["aliases"] for row in json.loads(out)] == [["jujutsu kaisen", "JJK"]]
    assert "(aliases: jujutsu kaisen, JJK)" in animetop("ip", "list")[1]
    # --alias and --remove-alias go with the commands that take them
    assert animetop("ip", "disable", str(ip), "--alias", "x")[0] == 2
    assert animetop("ip", "add", "ブルーロック", "--remove-alias", "x")[0] == 2


def test_an_import_file_gives_aliases(cli_env, tmp_path):
    path = tmp_path / "ips.csv"
    path.write_text("keyword,name,weight,aliases\n呪術廻戦,,1.0,呪術|jujutsu\n鬼滅の刃,,1.0,鬼\nブルーロック,,2,\n",
                    encoding="utf-8")
    code, out, err = animetop("ip", "import", str(path))
    assert code == 0 and out.endswith("2 IP(s) added, 1 skipped\n")
    assert "line 3" in err and "fewer than 2" in err  # 鬼滅の刃's alias 鬼 is refused, and so is the IP
    code, out, _ = animetop("ip", "list", "--format", "json")
    assert {row["keyword"]: row["aliases"] for row in json.loads(out)} == {"呪術廻戦": ["呪術", "jujutsu"],
                                                                         "ブルーロック": []}


def test_the_crawl_message_carries_the_ips_aliases(db, settings, broker):
    from dramatiq import Message

    broker.declare_queue(CRAWL)
    scheduler = Scheduler(settings, state_redis(settings), broker, FrozenClock(1_800_000_000.0))
    with_aliases = scheduler.catalogue.add("ハイキュー!!", aliases=["haikyu", "ハイキュ－ズ"])
    without = scheduler.catalogue.add("ダンジョン飯")
    assert sorted(scheduler.tick().enqueued) == [with_aliases.id, without.id]
    client = broker.client
    ids = client.lrange(f"{broker.namespace}:{CRAWL}", 0, -1)
    sent = {m["ip_id"]: m for m in (Message.decode(p).kwargs for p in client.hmget(f"{broker.namespace}:{CRAWL}.msgs",
                                                                                  ids))}
    assert sent[with_aliases.id]["aliases"] == ["haikyu", "ハイキュ－ズ"]
    assert "aliases" not in sent[without.id]  # as the message was before aliases existed


def test_an_existing_database_gains_the_columns_and_keeps_its_rows(db, settings):
    from lib.market.schema import create_tables
    from lib.scheduling.catalogue import Catalogue
    from lib.scheduling.schedule import ScheduleStore

    ip = Catalogue(ScheduleStore(state_redis(settings)), settings).add("推しの子")
    CrawlSearchTotal.create(task_id="t1", ip_id=ip.id, crawled_at=1.0, status="sold", num_found=3, pages_read=1,
                            items_read=3)
    # the tables as they were before aliases and misses were stored
    database.execute_sql("ALTER TABLE ip_metadata DROP COLUMN aliases")
    database.execute_sql("ALTER TABLE crawl_search_totals DROP COLUMN items_missed")
    create_tables()
    assert {c.name for c in database.get_columns("ip_metadata")} >= {"aliases"}
    assert {c.name for c in database.get_columns("crawl_search_totals")} >= {"items_missed"}
    row = IpMetadata.get_by_id(ip.id)
    assert (row.keyword, row.aliases) == ("推しの子", None)
    total = CrawlSearchTotal.get(CrawlSearchTotal.task_id == "t1")
    assert (total.items_read, total.items_missed) == (3, None)
    Catalogue(ScheduleStore(state_redis(settings)), settings).edit_aliases(ip.id, ["oshi no ko"])
    assert IpMetadata.get_by_id(ip.id).aliases == json.dumps(["oshi no ko"])
