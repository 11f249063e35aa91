"""The IPs' character lists in the database, on SQLite and MariaDB: kept in the operator's order, changed only
whole (a refused change writes nothing), one list per IP, and two changes at once checked one after the other."""

from __future__ import annotations

import json
import threading

import pytest

from lib.core.clock import FrozenClock, naive_utc, set_clock
from lib.core.db import database
from lib.segments import character_store as store
from lib.segments.character_lists import CharactersUnavailable, characters_for_ip
from lib.segments.character_rules import CharacterListError, MatcherConflict
from lib.segments.characters import Character
from models import IpCharacter, IpMetadata

T0 = 1_760_000_000.0


@pytest.fixture
def clock():
    clock = FrozenClock(T0)
    set_clock(clock)
    yield clock
    set_clock(None)


def new_ip(keyword: str) -> int:
    now = naive_utc(T0)
    return IpMetadata.create(keyword=keyword, display_name=keyword, created_at=now, updated_at=now).id


def rows(ip_id: int) -> list[tuple[str, list[str]]]:
    """The list as the table holds it, read here (the order: ``position``)."""
    return [(r.name, json.loads(r.aliases)) for r in
            IpCharacter.select().where(IpCharacter.ip_id == ip_id).order_by(IpCharacter.position)]


def test_a_list_is_added_to_read_and_removed_from_in_order(db, clock):
    ip = new_ip("呪術廻戦")
    assert store.stored_characters(ip) == [] and characters_for_ip(ip) == []
    assert store.add_character(ip, "五条悟", ["五条", "gojo"]).added == 1
    assert store.add_character(ip, "虎杖悠仁", ["虎杖"]).added == 1
    assert store.add_character(ip, "夏油傑").added == 1
    assert rows(ip) == [("五条悟", ["五条", "gojo"]), ("虎杖悠仁", ["虎杖"]), ("夏油傑", [])]
    assert characters_for_ip(ip) == [Character("五条悟", ("五条", "gojo")), Character("虎杖悠仁", ("虎杖",)),
                                     Character("夏油傑")]

    clock.advance(3600)
    changes = store.add_character(ip, "五条悟", ["ＧＯＪＯ", "悟"])  # ＧＯＪＯ is gojo: only 悟 is new
    assert (changes.added, changes.changed, changes.unchanged) == (0, 1, 2)
    assert not store.add_character(ip, "五条悟", ["悟"]).any       # as it is already
    assert rows(ip)[0] == ("五条悟", ["五条", "gojo", "悟"])
    gojo, itadori, _ = store.stored_characters(ip)
    assert gojo.created_at == naive_utc(T0) and gojo.updated_at == naive_utc(T0 + 3600)
    assert itadori.created_at == itadori.updated_at == naive_utc(T0)

    assert store.remove_character(ip, "虎杖") is None               # an alias is not a name
    assert store.remove_character(ip, "ｺﾞｼﾞｮｳｻﾄﾙ") is None
    assert store.remove_character(ip, "虎杖悠仁") == Character("虎杖悠仁", ("虎杖",))
    assert rows(ip) == [("五条悟", ["五条", "gojo", "悟"]), ("夏油傑", [])]
    assert store.stored_characters(ip)[1].updated_at == naive_utc(T0)  # moved up, not changed


def test_a_name_is_removed_in_any_spelling_the_matcher_reads_alike(db, clock):
    ip = new_ip("ちいかわ")
    store.replace_characters(ip, [("Hachiware", ["ハチワレ"]), ("うさぎ", [])])
    assert store.remove_character(ip, "ＨＡＣＨＩＷＡＲＥ") == Character("Hachiware", ("ハチワレ",))
    assert store.remove_character(ip, "ｳｻｷﾞ") == Character("うさぎ")
    assert rows(ip) == []


def test_a_replacement_keeps_the_characters_that_stay(db, clock):
    ip = new_ip("呪術廻戦")
    store.replace_characters(ip, [("五条悟", ["五条"]), ("虎杖悠仁", []), ("夏油傑", ["夏油"])])
    clock.advance(60)
    changes = store.replace_characters(ip, [("夏油傑", ["夏油"]), ("Gojo", ["五条"]), ("虎杖悠仁", ["itadori"]),
                                            ("七海建人", [])])
    # 五条悟 renamed Gojo: a new row (its alias moves with it); 夏油傑 only moved
    assert changes == store.Changes(added=2, changed=1, removed=1, moved=1, unchanged=0)
    assert rows(ip) == [("夏油傑", ["夏油"]), ("Gojo", ["五条"]), ("虎杖悠仁", ["itadori"]), ("七海建人", [])]
    made = {s.name: (s.created_at, s.updated_at) for s in store.stored_characters(ip)}
    assert made == {"夏油傑": (naive_utc(T0), naive_utc(T0)), "Gojo": (naive_utc(T0 + 60), naive_utc(T0 + 60)),
                    "虎杖悠仁": (naive_utc(T0), naive_utc(T0 + 60)), "七海建人": (naive_utc(T0 + 60),) * 2}
    # a respelling the matcher reads alike, which a case-folding collation would call the same key
    assert store.replace_characters(ip, [("gojo", ["五条"])]) == store.Changes(added=1, removed=4)
    assert rows(ip) == [("gojo", ["五条"])]
    assert not store.replace_characters(ip, [("gojo", ["五条"])]).any
    assert store.replace_characters(ip, []).removed == 1 and rows(ip) == []


def test_a_refused_change_writes_nothing(db, clock):
    ip = new_ip("呪術廻戦")
    store.replace_characters(ip, [("五条悟", ["五条"]), ("虎杖悠仁", ["虎杖"])])
    before = rows(ip)
    with pytest.raises(MatcherConflict, match="entry 3"):
        store.replace_characters(ip, [("七海建人", []), ("夏油傑", []), ("ななみ", ["七海建人"])])
    with pytest.raises(CharacterListError, match="control characters"):
        store.replace_characters(ip, [("七海建人", []), ("夏\n油", [])])
    with pytest.raises(MatcherConflict, match="the alias '虎杖' of '七海建人'"):
        store.add_character(ip, "七海建人", ["ナナミン", "虎杖"])
    with pytest.raises(MatcherConflict, match="the alias '虎杖' of '五条悟'"):
        store.add_character(ip, "五条悟", ["悟", "虎杖"])
    assert rows(ip) == before
    assert IpCharacter.select().count() == 2


def test_lists_are_kept_per_ip(db, clock):
    first, second = new_ip("呪術廻戦"), new_ip("呪術廻戦 0")
    store.add_character(first, "五条悟", ["gojo"])
    store.add_character(second, "五条悟", ["gojo"])       # another IP may name the same character
    store.remove_character(first, "五条悟")
    assert rows(first) == [] and rows(second) == [("五条悟", ["gojo"])]
    missing = second + 1000
    for change in (lambda: store.stored_characters(missing), lambda: store.add_character(missing, "五条悟"),
                   lambda: store.remove_character(missing, "五条悟"), lambda: store.replace_characters(missing, [])):
        with pytest.raises(store.UnknownIp, match=f"no IP with id {missing}"):
            change()
    with pytest.raises(CharactersUnavailable, match=f"no IP with id {missing}"):
        characters_for_ip(missing)
    assert IpCharacter.select().where(IpCharacter.ip_id == missing).count() == 0


def test_changes_at_once_are_checked_one_after_the_other(db, clock, monkeypatch):
    """Operators adding, at the same moment, characters that share an alias: one is stored, the others are
    refused, as if they had come one after the other (each change holds the IP's row)."""
    import time

    from lib.segments import character_rules

    def slow_merge(*args, **kwargs):  # between reading the list and writing it: where another change could slip in
        time.sleep(0.05)
        return character_rules.merged(*args, **kwargs)

    monkeypatch.setattr(store, "merged", slow_merge)
    ip = new_ip("呪術廻戦")
    writers = 6
    for round_ in range(3):
        start = threading.Barrier(writers)
        outcomes: list[str] = []

        def add(n: int) -> None:
            start.wait(10)
            try:
                store.add_character(ip, f"キャラ{round_}-{n}", [f"shared{round_}"])
                outcomes.append("added")
            except MatcherConflict:
                outcomes.append("refused")
            finally:
                database.close()

        threads = [threading.Thread(target=add, args=(n,)) for n in range(writers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert sorted(outcomes) == ["added"] + ["refused"] * (writers - 1), outcomes
        owners = [name for name, aliases in rows(ip) if f"shared{round_}" in aliases]
        assert len(owners) == 1, owners
