"""`animetop leaderboard` and `animetop ip show` as a user runs them: the order and the numbers equal the
independent computation of the definitions of docs/concepts/measures.md over the database the scripted crawls went
into."""

import csv
import io
import json
import time

import pytest

from lib.core import keys
from lib.core.redis_client import state_redis
from lib.market.read_side import LEADERBOARD_KINDS, ReadSide

from ..helpers import flatten, run_cli
from .scripted import H, expected_hours, expected_window, make_script, shifted
from .test_hourly_rows import deliver
from .test_windows import MINIMUMS, close

KEY = {"time_to_sell": "time_to_sell_median"}


@pytest.fixture
def market(env, settings, db):
    """Four IPs of scripted markets ending two minutes ago, in the test's database."""
    now = time.time()
    scripts = {}
    for seed, api in ((11, True), (12, True), (13, False), (14, True)):
        script = make_script(seed, api=api, n_crawls=28)
        last = max(at for at, _ in script.crawls)
        offset = (now - 120 - last) // H * H  # whole hours: the same hours as the script's own
        scripts[deliver(settings, shifted(script, offset), "in_order", seed)] = shifted(script, offset)
    return scripts


def expected_order(scripts, by: str, hours: int) -> list[int]:
    now = time.time()
    values = {ip: expected_window(s, hours, now, MINIMUMS) for ip, s in scripts.items()}
    def value(ip):
        if by == "heat_low":  # the lower end of the heat's interval (docs/concepts/measures.md, definition 8)
            return (values[ip]["heat_interval"] or [None])[0]
        return values[ip][KEY.get(by, by)]

    ranked = [ip for ip in values if value(ip) is not None]
    sign = 1 if by == "time_to_sell" else -1
    return sorted(ranked, key=lambda ip: (sign * value(ip), -values[ip]["outflow"], ip))


def test_leaderboard_order_equals_the_definitions(env, market):
    for hours in (24, 6):  # one market for both windows (building it is most of the test's time)
        leaderboard_order_equals_the_definitions(env, market, hours)


def ranked_in_one_hour(env, market, by: str, hours: int, fmt: str):
    """The command's ranking and the definitions' in the same wall-clock hour (the window slides at the hour; a board
    cached in the hour before is not served into this one)."""
    for _ in range(2):
        hour = time.time() // H
        out = run_cli(env, "leaderboard", "--by", by, "--hours", str(hours), "--format", fmt)
        expected = expected_order(market, by, hours)
        if time.time() // H == hour:
            break
    return out, expected


def leaderboard_order_equals_the_definitions(env, market, hours):
    seen_any = 0
    for by in LEADERBOARD_KINDS:
        out, expected = ranked_in_one_hour(env, market, by, hours, "json")
        assert out.returncode == 0, out.stderr
        rows = json.loads(out.stdout)
        assert [r["ip_id"] for r in rows] == expected, by
        assert [r["rank"] for r in rows] == list(range(1, len(rows) + 1))
        seen_any += len(rows) > 1
    assert seen_any >= 6  # most rankings have several IPs to order
    table = run_cli(env, "leaderboard", "--by", "heat", "--hours", str(hours))
    assert table.returncode == 0 and "HEAT" in table.stdout
    # the IPs a ranking leaves out are counted, with what the measure needs (docs: measures, "Insufficient")
    left_out = len(market) - len(expected_order(market, "heat", hours))
    if left_out:
        assert (f"{left_out} IP(s) with data in the window left out: heat needs 24 tracked hours in the 7 days "
                "before the window, 10 sales in the window and its baseline together") in table.stdout
    else:
        assert "left out" not in table.stdout
    data, expected = ranked_in_one_hour(env, market, "outflow", hours, "csv")
    parsed = list(csv.DictReader(io.StringIO(data.stdout)))
    assert [int(r["ip_id"]) for r in parsed] == expected


def test_ip_show_equals_the_definitions(env, market):
    ip_id, script = next(iter(market.items()))
    out = run_cli(env, "ip", "show", str(ip_id), "--hours", "24", "--format", "json")
    assert out.returncode == 0, out.stderr
    detail = json.loads(out.stdout)
    expected = expected_window(script, 24, time.time(), MINIMUMS)
    got = flatten(detail["measures"])
    assert not {k: (got[k], expected[k]) for k in expected if not close(got[k], expected[k])}
    rows = expected_hours(script)
    since = time.time() - time.time() % H - 23 * H
    series = list(csv.DictReader(io.StringIO(run_cli(env, "ip", "show", str(ip_id), "--format", "csv").stdout)))
    assert [(int(r["inflow"]), int(r["outflow"])) for r in series] == \
        [(rows[h]["inflow"], rows[h]["outflow"]) for h in sorted(rows) if h >= since]
    table = run_cli(env, "ip", "show", str(ip_id))
    assert table.returncode == 0 and "sell-through" in table.stdout and "HOUR" in table.stdout


def test_the_leaderboard_is_served_from_its_cache(env, settings, market):
    r = state_redis(settings)
    side = ReadSide(settings, r)
    first = side.leaderboard("heat", 24)
    assert r.exists(keys.leaderboard(24))
    assert side.leaderboard("heat", 24) == first


def test_ip_show_by_segment_and_segments_reapply(env, settings, db, tmp_path):
    """``ip show --by`` shows each goods type's measures as the definitions give them over its listings, in JSON,
    CSV and a table; ``segments reapply`` after a taxonomy change derives them again (and the cached answer goes)."""
    from .test_segments import CHANGED_GOODS, CHANGED_TAXONOMY, TITLES, check_segments, members

    script = make_script(15, n_crawls=20, titles=list(TITLES))
    offset = (time.time() - 120 - max(at for at, _ in script.crawls)) // H * H
    script = shifted(script, offset)
    ip_id = deliver(settings, script, "in_order", 15)
    goods = members(script, {title: g for title, (g, _) in TITLES.items()})

    out = run_cli(env, "ip", "show", str(ip_id), "--by", "goods", "--hours", "12", "--format", "json")
    assert out.returncode == 0, out.stderr
    shown = json.loads(out.stdout)
    expected = check_segments(script, ip_id, "goods", goods, 12, time.time())  # what ip show answers, by definition
    assert [s["key"] for s in shown["segments"]] == sorted(
        (k for k, e in expected.items() if e["inflow"] or e["outflow"]),
        key=lambda k: (-expected[k]["outflow"], -expected[k]["inflow"], k))
    for segment in shown["segments"]:
        e, m = expected[segment["key"]], segment["measures"]
        assert (m["inflow"]["value"], m["outflow"]["value"]) == (e["inflow"], e["outflow"])
        assert close(m["median_price"]["value"], e["median_price"]) and close(m["sell_through"]["value"],
                                                                              e["sell_through"])
    rows = list(csv.DictReader(io.StringIO(run_cli(env, "ip", "show", str(ip_id), "--by", "goods", "--hours", "12",
                                                   "--format", "csv").stdout)))
    assert [(r["key"], int(r["outflow"]), r["median_price"] or None) for r in rows] == \
        [(s["key"], s["measures"]["outflow"]["value"],
          None if s["measures"]["median_price"]["value"] is None else str(s["measures"]["median_price"]["value"]))
         for s in shown["segments"]]
    table = run_cli(env, "ip", "show", str(ip_id), "--by", "goods", "--hours", "12").stdout
    assert "GOODS" in table and "acrylic_stand" in table and "アクリルスタンド" in table
    too_long = run_cli(env, "ip", "show", str(ip_id), "--by", "goods", "--hours", str(90 * 24 + 1))
    assert too_long.returncode == 1 and "RETENTION_WINDOW" in too_long.stderr

    taxonomy = tmp_path / "goods.toml"
    taxonomy.write_text(CHANGED_TAXONOMY, encoding="utf-8")
    changed = {**env, "SEGMENTS_TAXONOMY": str(taxonomy)}
    done = run_cli(changed, "segments", "reapply", "--ip", str(ip_id))
    assert done.returncode == 0, done.stderr
    assert f"1 IP(s), {len({it['source_id'] for _, items in script.crawls for it in items})} listing(s)" in done.stdout
    out = run_cli(changed, "ip", "show", str(ip_id), "--by", "goods", "--hours", "12", "--format", "json")
    assert {s["key"] for s in json.loads(out.stdout)["segments"]} <= set(members(script, CHANGED_GOODS)) \
        and "badge" in {s["key"] for s in json.loads(out.stdout)["segments"]}  # the cached answer was dropped
    again = run_cli(changed, "segments", "reapply")
    assert again.returncode == 0 and "0 segment row(s) added, 0 removed" in again.stdout, again.stdout
