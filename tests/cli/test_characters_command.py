"""``animetop ip characters ID [list|add|remove|import|export]`` on SQLite and MariaDB: a list kept by hand, an
import that replaces it whole or not at all, and the exit codes of the other ``ip`` commands."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout

import pytest

from lib import cli
from lib.core.settings import load_settings, use_settings

from ..helpers import run_cli


@pytest.fixture
def cli_env(db, database_url, env):
    """The environment of an ``animetop`` process on the test's database, and this process's settings on it."""
    values = {**env, "DATABASE_URL": database_url}
    use_settings(load_settings(values))
    yield values
    use_settings(None)


def animetop(*argv: str) -> tuple[int, str, str]:
    """``animetop ARGV`` in this process: exit code, standard output, standard error."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def new_ip(keyword: str) -> int:
    code, out, err = animetop("ip", "add", keyword)
    assert code == 0, err
    return int(out.split()[2].rstrip(":"))  # "added IP 3: '…' …"


def resegmented(ip: int, listings: int = 0, added: int = 0, removed: int = 0) -> str:
    """The line a change of the list prints: the IP's stored listings segmented again by it."""
    return (f"IP {ip}: {listings:,} stored listing(s) segmented again: {added:,} segment row(s) added, "
            f"{removed:,} removed\n")


def exported(ip: int) -> list[dict]:
    code, out, err = animetop("ip", "characters", str(ip), "export")
    assert code == 0, err
    return json.loads(out)


def test_a_list_kept_by_hand(cli_env, tmp_path):
    ip = new_ip("呪術廻戦")
    code, out, err = animetop("ip", "characters", str(ip))
    assert (code, out, err) == (0, f"NAME  ALIASES\n0 character(s) of IP {ip}\n", "")
    assert animetop("ip", "characters", str(ip), "add", "五条悟", "--alias", "五条", "--alias=gojo")[:2] == (
        0, f"IP {ip}: added '五条悟'\n" + resegmented(ip))
    assert animetop("ip", "characters", str(ip), "add", "虎杖悠仁", "--alias", "虎杖")[0] == 0
    code, out, _ = animetop("ip", "characters", str(ip), "add", "五条悟", "--alias", "悟", "--alias", "GOJO")
    assert (code, out) == (0, f"IP {ip}: updated '五条悟' (already listed; its new aliases added)\n" + resegmented(ip))
    code, out, _ = animetop("ip", "characters", str(ip), "add", "五条悟", "--alias", "悟")
    assert (code, out) == (0, f"IP {ip}: unchanged: '五条悟' (already listed with these aliases)\n")

    code, out, _ = animetop("ip", "characters", str(ip), "list")
    assert code == 0
    assert out.splitlines() == ["NAME      ALIASES", "五条悟    五条, gojo, 悟", "虎杖悠仁  虎杖",  # CJK: two columns
                                f"2 character(s) of IP {ip}"]
    code, out, _ = animetop("ip", "characters", str(ip), "--format", "json")
    assert [(r["name"], r["aliases"]) for r in json.loads(out)] == [("五条悟", ["五条", "gojo", "悟"]),
                                                                  ("虎杖悠仁", ["虎杖"])]
    assert all(r["created_at"].endswith("Z") and r["updated_at"] >= r["created_at"] for r in json.loads(out))

    # export → import into another IP: the same list (an import file is what export prints)
    listed = exported(ip)
    assert listed == [{"name": "五条悟", "aliases": ["五条", "gojo", "悟"]}, {"name": "虎杖悠仁", "aliases": ["虎杖"]}]
    file = tmp_path / "characters.json"
    file.write_text(json.dumps(listed, ensure_ascii=False), encoding="utf-8")
    other = new_ip("呪術廻戦 0")
    code, out, err = animetop("ip", "characters", str(other), "import", str(file))
    assert (code, err) == (0, "")
    assert out == (f"IP {other}: 2 character(s) listed (2 added, 0 with other aliases, 0 removed, 0 moved, "
                   f"0 unchanged)\n" + resegmented(other))
    assert exported(other) == listed

    # an import replaces the list whole: what the file does not name is removed
    file.write_text(json.dumps([{"name": "虎杖悠仁", "aliases": ["itadori"]}, {"name": "七海建人"}],
                               ensure_ascii=False), encoding="utf-8")
    code, out, _ = animetop("ip", "characters", str(other), "import", str(file))
    assert out == (f"IP {other}: 2 character(s) listed (1 added, 1 with other aliases, 1 removed, 0 moved, "
                   f"0 unchanged)\n" + resegmented(other))
    assert exported(other) == [{"name": "虎杖悠仁", "aliases": ["itadori"]}, {"name": "七海建人", "aliases": []}]
    assert exported(ip) == listed                         # the first IP's list is its own

    code, out, err = animetop("ip", "characters", str(ip), "remove", "ＧＯＪＯ")   # an alias, not a name
    assert (code, out) == (1, "") and f"IP {ip} lists no character named 'ＧＯＪＯ'" in err
    assert animetop("ip", "characters", str(ip), "remove", "五条悟")[:2] == (
        0, f"IP {ip}: removed '五条悟'\n" + resegmented(ip))
    assert exported(ip) == [{"name": "虎杖悠仁", "aliases": ["虎杖"]}]


@pytest.mark.parametrize("content, refusal", [
    ("[{\"name\": \"五条悟\"},\n {\"name\": ", "not JSON: Expecting value: line 2 column 11"),
    ('{"name": "五条悟"}', "expected a JSON array"),
    ('[{"name": "五条悟"}, {"name": "夏油傑", "alias": ["夏油"]}]', "entry 2: unknown key 'alias'"),
    ('[{"name": "七海建人"}, {"name": "夏油傑"}, {"name": "ななみ", "aliases": ["七海建人"]}]',
     "entry 3: the alias '七海建人' of 'ななみ' is the same word to the matcher as the name '七海建人' (entry 1)"),
    ('[{"name": "七海建人"}, {"name": "夏油傑", "aliases": ["夏油", "夏油\\t傑"]}]',
     "entry 2: alias 2 of '夏油傑' ('夏油\\t傑') contains control characters (U+0009"),
    ('[{"name": "七海建人"}, {"name": "' + "傑" * 101 + '"}]', "entry 2: the name '傑傑"),
    ('[{"name": "七海建人"}, {"name": "★★"}]', "entry 2: the name '★★' has no letter or digit"),
])
def test_a_bad_import_file_is_refused_naming_the_entry_and_changes_nothing(cli_env, tmp_path, content, refusal):
    ip = new_ip("呪術廻戦")
    animetop("ip", "characters", str(ip), "add", "五条悟", "--alias", "五条")
    animetop("ip", "characters", str(ip), "add", "虎杖悠仁")
    before = exported(ip)
    file = tmp_path / "bad.json"
    file.write_text(content, encoding="utf-8")
    code, out, err = animetop("ip", "characters", str(ip), "import", str(file))
    assert (code, out) == (1, "")
    assert err.startswith(f"animetop ip characters import: {file}: ") and refusal in err, err
    assert exported(ip) == before


def test_mistakes_are_told_with_the_ip_commands_exit_codes(cli_env, tmp_path):
    ip = new_ip("呪術廻戦")
    missing = str(ip + 1000)
    file = tmp_path / "characters.json"
    file.write_text('[{"name": "五条悟"}]', encoding="utf-8")
    for argv in ([missing], [missing, "export"], [missing, "add", "五条悟"], [missing, "remove", "五条悟"],
                 [missing, "import", str(file)]):
        code, out, err = animetop("ip", "characters", *argv)
        assert (code, out) == (1, "") and f"no IP with id {missing}" in err, argv
    code, _, err = animetop("ip", "characters", "five")
    assert code == 1 and "expected an IP id (a number); got 'five'" in err
    code, _, err = animetop("ip", "characters", str(ip), "import", str(tmp_path / "none.json"))
    assert code == 1 and "No such file" in err
    code, _, err = animetop("ip", "characters", str(ip), "add", "五条悟", "--alias", "五条\n悟")
    assert code == 1 and "alias 1 of '五条悟' ('五条\\n悟') contains control characters (U+000A" in err
    for argv, complaint in [([str(ip), "add"], "expected NAME"), ([str(ip), "import"], "expected FILE"),
                            ([str(ip), "export", "x"], "unexpected argument 'x'"),
                            ([str(ip), "remove", "五条悟", "--alias", "五条"], "--alias goes with add"),
                            ([str(ip), "--format", "csv"], "--format table or json")]:
        code, out, err = animetop("ip", "characters", *argv)
        assert (code, out) == (2, "") and complaint in err, argv
    code, _, err = animetop("ip", "show", str(ip), "add")
    assert code == 2 and "go with `ip characters ID`" in err
    assert exported(ip) == []


def test_a_change_segments_the_ip_s_stored_listings_again(cli_env):
    """Listings stored before a character is listed name it as soon as it is (no ``segments reapply``), and stop
    when it is removed; a command that changes nothing segments nothing."""
    from lib.core.clock import FrozenClock
    from lib.core.redis_client import state_redis
    from lib.core.settings import get_settings
    from lib.market.processing import CrawlResult, ResultProcessor
    from lib.segments.stored import CHARACTER
    from models import ListingSegment

    ip = new_ip("呪術廻戦")
    titles = {"t1": "五条悟 アクスタ", "t2": "ゴジョウ サトル 缶バッジ", "t3": "虎杖 ぬいぐるみ", "t4": "ぬいぐるみ"}
    settings = get_settings()
    ResultProcessor(settings, state_redis(settings), FrozenClock(1_800_000_000.0)).apply(CrawlResult.parse(
        ip, "titled", 1_800_000_000.0,
        [{"source_id": sid, "title": t, "status": "on_sale", "price": 500} for sid, t in titles.items()]))

    def rows() -> set[tuple[str, str]]:
        return set(ListingSegment.select(ListingSegment.source_id, ListingSegment.key)
                   .where((ListingSegment.ip_id == ip) & (ListingSegment.kind == CHARACTER)).tuples())

    code, out, _ = animetop("ip", "characters", str(ip), "add", "五条悟")
    assert (code, out) == (0, f"IP {ip}: added '五条悟'\n" + resegmented(ip, 4, 1)) and rows() == {("t1", "五条悟")}
    code, out, _ = animetop("ip", "characters", str(ip), "add", "五条悟", "--alias", "ゴジョウサトル")
    assert out.endswith(resegmented(ip, 4, 1)) and rows() == {("t1", "五条悟"), ("t2", "五条悟")}
    code, out, _ = animetop("ip", "characters", str(ip), "add", "五条悟", "--alias", "ゴジョウサトル")
    assert "segmented again" not in out  # unchanged
    code, out, _ = animetop("ip", "characters", str(ip), "add", "虎杖悠仁", "--alias", "虎杖")
    assert out.endswith(resegmented(ip, 4, 1)) and ("t3", "虎杖悠仁") in rows()
    code, out, _ = animetop("ip", "characters", str(ip), "remove", "五条悟")
    assert out.endswith(resegmented(ip, 4, 0, 2)) and rows() == {("t3", "虎杖悠仁")}


def test_a_real_process_round_trips_the_list(cli_env, tmp_path):
    """What an operator runs: separate ``animetop`` processes, the list in, out and in again, unchanged."""
    ip = new_ip("鬼滅の刃")
    listed = [{"name": "竈門炭治郎", "aliases": ["炭治郎", "たんじろう", "Tanjiro"]},
              {"name": "冨岡義勇", "aliases": ["義勇", "ぎゆう"]}]
    file = tmp_path / "in.json"
    file.write_text(json.dumps(listed, ensure_ascii=False), encoding="utf-8-sig")  # with a byte-order mark
    done = run_cli(cli_env, "ip", "characters", str(ip), "import", str(file))
    assert done.returncode == 0, done.stderr
    done = run_cli(cli_env, "ip", "characters", str(ip), "export")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == listed
    done = run_cli(cli_env, "ip", "characters", str(ip + 1000))
    assert done.returncode == 1 and f"no IP with id {ip + 1000}" in done.stderr
