"""``animetop segments classify``: titles on standard input, one JSON object a line out, as an operator runs it
(a fresh process; UTF-8 whatever the locale)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def segments(*args: str, stdin: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    # a C locale and a Latin-1 standard stream encoding: the command must still read and write UTF-8
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "PYTHONIOENCODING": "latin-1",
           "PYTHONUTF8": "0", **(env or {})}
    return subprocess.run([sys.executable, "-m", "lib.cli", "segments", "classify", *args], env=env, cwd=ROOT,
                          input=stdin.encode("utf-8"), capture_output=True, timeout=60)


def answers(done: subprocess.CompletedProcess[bytes]) -> list[dict]:
    assert done.returncode == 0, done.stderr.decode()
    return [json.loads(line) for line in done.stdout.decode("utf-8").splitlines()]


def characters_file(tmp_path: Path) -> Path:
    path = tmp_path / "characters.json"
    path.write_text(json.dumps([{"name": "五条悟", "aliases": ["五条", "gojo"]},
                                {"name": "虎杖悠仁", "aliases": ["虎杖"]}], ensure_ascii=False), encoding="utf-8")
    return path


def test_one_json_object_a_title(tmp_path):
    titles = ("呪術廻戦 五条悟 アクスタ 缶バッジ\r\n"       # a Windows line end
              "\n"                                          # a blank line: no answer
              "呪術廻戦 虎杖 ぬいぐるみ 【検索用】五条 アクスタ\n"
              "ちいかわ ステッカー\n")
    done = segments("--characters", str(characters_file(tmp_path)), stdin=titles)
    assert answers(done) == [
        {"title": "呪術廻戦 五条悟 アクスタ 缶バッジ", "goods": ["acrylic_stand", "can_badge"],
         "characters": ["五条悟"]},
        {"title": "呪術廻戦 虎杖 ぬいぐるみ 【検索用】五条 アクスタ", "goods": ["plush"], "characters": ["虎杖悠仁"]},
        {"title": "ちいかわ ステッカー", "goods": ["other"], "characters": []},
    ]
    assert "五条悟".encode() in done.stdout  # written as text, not \u escapes


def test_without_characters_none_are_matched():
    assert answers(segments(stdin="Gojo acrylic stand\n")) == [
        {"title": "Gojo acrylic stand", "goods": ["acrylic_stand"], "characters": []}]


def test_an_ip_s_characters_are_read_from_its_list(db, database_url, tmp_path):
    from lib.core.clock import naive_utc
    from lib.segments.character_store import replace_characters
    from models import IpMetadata

    now = naive_utc(0)
    ip = IpMetadata.create(keyword="呪術廻戦", display_name="呪術廻戦", created_at=now, updated_at=now).id
    empty = IpMetadata.create(keyword="ちいかわ", display_name="ちいかわ", created_at=now, updated_at=now).id
    replace_characters(ip, [("七海建人", ["ナナミン", "nanami"]), ("五条悟", ["五条"])])
    env = {"DATABASE_URL": database_url, "DATA_DIR": str(tmp_path / "var")}
    titles = "ﾅﾅﾐﾝ 五条 アクスタ\nNanami plush\n五条 ぬいぐるみ\n"
    assert [a["characters"] for a in answers(segments("--ip", str(ip), stdin=titles, env=env))] == [
        ["七海建人", "五条悟"], ["七海建人"], ["五条悟"]]                      # in the list's order
    # --characters FILE instead of the list (to try one before importing it)
    with_file = segments("--ip", str(ip), "--characters", str(characters_file(tmp_path)), stdin=titles, env=env)
    assert [a["characters"] for a in answers(with_file)] == [["五条悟"], [], ["五条悟"]]

    none = segments("--ip", str(empty), stdin=titles, env=env)
    assert [a["characters"] for a in answers(none)] == [[], [], []]
    assert f"IP {empty} lists no characters" in none.stderr.decode()
    missing = segments("--ip", str(ip + 1000), stdin=titles, env=env)
    assert missing.returncode == 2 and missing.stdout == b""
    assert f"no IP with id {ip + 1000}" in missing.stderr.decode()


def test_an_operator_tries_a_taxonomy_of_their_own(tmp_path):
    taxonomy = tmp_path / "goods.toml"
    taxonomy.write_text('[[types]]\nid = "mug"\nterms = ["マグカップ"]\n\n[[types]]\nid = "other"\n',
                        encoding="utf-8")
    assert [a["goods"] for a in answers(segments("--taxonomy", str(taxonomy), stdin="鬼滅 ﾏｸﾞｶｯﾌﾟ\nアクスタ\n"))] \
        == [["mug"], ["other"]]
    assert [a["goods"] for a in answers(segments(stdin="鬼滅 ﾏｸﾞｶｯﾌﾟ\nアクスタ\n"))] \
        == [["other"], ["acrylic_stand"]]


def test_a_bad_file_is_refused_with_its_name(tmp_path):
    taxonomy = tmp_path / "goods.toml"
    taxonomy.write_text('[[types]]\nid = "mug"\n', encoding="utf-8")
    done = segments("--taxonomy", str(taxonomy), stdin="アクスタ\n")
    assert done.returncode == 2 and str(taxonomy) in done.stderr.decode() and "'other'" in done.stderr.decode()
    bad_characters = tmp_path / "characters.json"
    bad_characters.write_text('{"name": "五条悟"}', encoding="utf-8")
    done = segments("--characters", str(bad_characters), stdin="アクスタ\n")
    assert done.returncode == 2 and str(bad_characters) in done.stderr.decode()
