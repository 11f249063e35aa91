"""The IP catalogue from the command line, on both databases."""

import json

import pytest

from lib.core.redis_client import state_redis
from lib.crawling.page_plan import CrawlPlan, SearchPlan, store_plan
from lib.scheduling.catalogue import Catalogue, CatalogueError
from lib.scheduling.schedule import ScheduleStore
from models import IpMetadata

from .helpers import run_cli

TRICKY = ["鬼滅の刃", "ONE PIECE ワンピース", "Re:ゼロ", "it's 100% \"real\"; DROP TABLE ip_metadata; --", "ｳﾏ娘 ⭐"]


@pytest.fixture
def cli_env(env, database_url):
    return {**env, "DATABASE_URL": database_url}


def test_add_list_disable_enable_round_trip_keywords_unchanged(cli_env, settings, database_url):
    assert run_cli(cli_env, "db", "init").returncode == 0
    for keyword in TRICKY:
        result = run_cli(cli_env, "ip", "add", keyword, "--weight", "2")
        assert result.returncode == 0, result.stderr
    listed = json.loads(run_cli(cli_env, "ip", "list", "--format", "json").stdout)
    assert [r["keyword"] for r in listed] == TRICKY
    assert all(r["active"] and r["next_crawl_at"] for r in listed)

    schedule = ScheduleStore(state_redis(settings))
    first = listed[0]["id"]
    assert run_cli(cli_env, "ip", "disable", str(first)).returncode == 0
    assert schedule.time_of(first) is None
    listed = json.loads(run_cli(cli_env, "ip", "list", "--format", "json").stdout)
    assert listed[0]["active"] is False
    assert run_cli(cli_env, "ip", "enable", str(first)).returncode == 0
    assert schedule.time_of(first) is not None


def test_an_operator_pins_and_unpins_an_ip_s_interval(cli_env, settings, database_url):
    assert run_cli(cli_env, "db", "init").returncode == 0
    assert run_cli(cli_env, "ip", "add", "呪術廻戦").returncode == 0
    ip_id = json.loads(run_cli(cli_env, "ip", "list", "--format", "json").stdout)[0]["id"]
    pinned = run_cli(cli_env, "ip", "pin", str(ip_id), "--every", "6h")
    assert pinned.returncode == 0, pinned.stderr
    assert pinned.stdout.startswith(f"pinned IP {ip_id} ('呪術廻戦'): crawled every 6h, whatever its heat; next crawl ")
    listed = json.loads(run_cli(cli_env, "ip", "list", "--format", "json").stdout)[0]
    assert (listed["pinned_interval_s"], listed["interval_s"], listed["interval_why"]) == \
        (6 * 3600, 6 * 3600, "pinned by an operator")
    table = run_cli(cli_env, "ip", "list").stdout
    assert "   6h  " in table and table.rstrip().splitlines()[1].endswith("呪術廻戦  (pinned)"), table
    unpinned = run_cli(cli_env, "ip", "unpin", str(ip_id))
    assert unpinned.returncode == 0 and "its interval follows its heat again" in unpinned.stdout
    listed = json.loads(run_cli(cli_env, "ip", "list", "--format", "json").stdout)[0]
    assert listed["pinned_interval_s"] is None and listed["interval_s"] == 2 * 3600  # weight 1: the base interval
    assert listed["interval_why"] == "heat: weight 1.00, base 2h / weight = 2h"
    # refused, and nothing changed
    for args, code, words in [(("pin", str(ip_id)), 2, "--every with `ip pin ID`, which needs it"),
                              (("pin", str(ip_id), "--every", "soon"), 2, "expected a duration"),
                              (("pin", str(ip_id), "--every", "30s"), 1, "between a minute and 30 days"),
                              (("unpin", str(ip_id), "--every", "1h"), 2, "--every with `ip pin ID`"),
                              (("pin", "999", "--every", "1h"), 1, "no IP with id 999")]:
        refused = run_cli(cli_env, "ip", *args)
        assert refused.returncode == code and words in refused.stderr, (args, refused.stderr)
    assert json.loads(run_cli(cli_env, "ip", "list", "--format", "json").stdout)[0]["pinned_interval_s"] is None


@pytest.mark.parametrize("keyword, message", [
    ("", "empty"), ("   ", "empty"), ("x" * 201, "at most 200"), ("a\tb", "control characters"),
])
def test_bad_keywords_are_refused_clearly(db, cli_env, keyword, message):
    result = run_cli(cli_env, "ip", "add", keyword)
    assert result.returncode == 1
    assert message in result.stderr


def test_duplicate_and_unknown_ids(db, settings):
    catalogue = Catalogue(ScheduleStore(state_redis(settings)), settings)
    catalogue.add("呪術廻戦")
    with pytest.raises(CatalogueError, match="exists already"):
        catalogue.add("呪術廻戦")
    with pytest.raises(CatalogueError, match="no IP with id 999"):
        catalogue.disable(999)


def test_import_lines_and_csv(db, settings, tmp_path):
    catalogue = Catalogue(ScheduleStore(state_redis(settings)), settings)
    lines = tmp_path / "ips.txt"
    lines.write_text("鬼滅の刃\n# a comment\n\n呪術廻戦\n鬼滅の刃\n", encoding="utf-8")
    added, problems = catalogue.import_file(lines)
    assert added == 2 and len(problems) == 1 and "exists already" in problems[0]
    table = tmp_path / "ips.csv"
    table.write_text("keyword,name,weight\nチェンソーマン,Chainsaw Man,1.5\nぼっち・ざ・ろっく!,,abc\n",
                     encoding="utf-8")
    added, problems = catalogue.import_file(table)
    assert added == 1 and "weight" in problems[0]
    ip = IpMetadata.get(IpMetadata.keyword == "チェンソーマン")
    assert (ip.display_name, ip.weight) == ("Chainsaw Man", 1.5)


def test_ip_list_shows_how_deep_each_ip_s_next_crawl_reads(cli_env, settings, database_url):
    assert run_cli(cli_env, "db", "init").returncode == 0
    for keyword in ("呪術廻戦", "ハイキュー!!"):
        assert run_cli(cli_env, "ip", "add", keyword).returncode == 0
    first, second = (r["id"] for r in json.loads(run_cli(cli_env, "ip", "list", "--format", "json").stdout))
    at = 1_800_000_000.0
    store_plan(state_redis(settings), first, CrawlPlan(
        SearchPlan(5, at - 600, "back to the newest listing the last crawl saw"),
        SearchPlan(5, at - 192 * 3600 - 600, "back to listings created 192 h before the last crawl"), made_at=at,
        flow=400.0, checks=("m1", "m2")))
    listed = {r["id"]: r for r in json.loads(run_cli(cli_env, "ip", "list", "--format", "json").stdout)}
    assert listed[first]["pages"]["on_sale"] == {"most": 5, "back_to": "2027-01-15T07:50:00+00:00",
                                                 "why": "back to the newest listing the last crawl saw"}
    assert listed[first]["pages"]["sold"]["back_to"] == "2027-01-07T07:50:00+00:00"
    assert (listed[first]["checks"], listed[second]["checks"]) == (2, 0)
    # its flow shortens its interval from the heat's 2 hours to the least one (1 hour)
    assert (listed[first]["flow_per_hour"], listed[first]["interval_s"]) == (400.0, 3600)
    assert listed[first]["interval_why"] == "flow: 400 new listings an hour fill 50% of 5 pages in 45m, held at the " \
        "least interval"
    assert (listed[second]["flow_per_hour"], listed[second]["interval_s"]) == (None, 7200)
    # not crawled yet: each search to its end or its cap
    assert listed[second]["pages"]["on_sale"] == {"most": 5, "back_to": None, "why": "the page cap"}
    rows = run_cli(cli_env, "ip", "list").stdout.splitlines()
    assert "ON SALE BACK TO" in rows[0] and "SOLD BACK TO" in rows[0]
    assert "2027-01-15 07:50:00  2027-01-07 07:50:00  呪術廻戦" in rows[1], rows
    assert "the end (≤ 5 pages)  the end (≤ 5 pages)  ハイキュー!!" in rows[2], rows
