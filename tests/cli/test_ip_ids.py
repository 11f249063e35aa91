"""An IP id no row can have (0, negative, past ``MAX_AUTO_ID``, past 64 bits) given to any command that takes one
is told in one line, as an unknown IP or a usage error, never a traceback: SQLite cannot even bind an integer
past 64 bits (it raised ``OverflowError`` through ``ip show``, ``ip disable``, ``alerts list --ip`` …)."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

import pytest

from lib import cli
from lib.core.settings import load_settings, use_settings
from models.base import MAX_AUTO_ID

IMPOSSIBLE = ["0", "-1", str(MAX_AUTO_ID + 1), "389458025881176113152"]
#: Commands taking the IP id as an operand: told as an unknown IP (exit 1).
OPERAND = [("ip", "show", "{}"), ("ip", "show", "{}", "--by", "goods"), ("ip", "disable", "{}"),
           ("ip", "enable", "{}"), ("ip", "characters", "{}"), ("ip", "characters", "{}", "add", "五条悟")]
#: Commands taking it as ``--ip``: a usage error naming the option (exit 2).
OPTION = [("alerts", "list", "--ip", "{}"), ("segments", "reapply", "--ip", "{}")]


@pytest.fixture
def cli_env(db, database_url, env):
    use_settings(load_settings({**env, "DATABASE_URL": database_url}))
    yield
    use_settings(None)


def animetop(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = cli.main(list(argv))
        except SystemExit as e:  # argparse's usage errors
            code = int(e.code or 0)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("ip_id", IMPOSSIBLE)
def test_an_id_no_row_can_have_is_told_in_one_line(cli_env, ip_id):
    for command in OPERAND + OPTION:
        argv = [part.format(ip_id) for part in command]
        code, out, err = animetop(*argv)
        expected = 2 if command in OPTION else 1
        assert (code, out) == (expected, ""), (argv, err)
        told = f"no IP with id {ip_id} (IP ids run from 1 to {MAX_AUTO_ID})"
        last = err.strip().splitlines()[-1]
        assert "Traceback" not in err and told in last, (argv, err)
        # an operand: the command's one line; an option: argparse's usage, then its error naming the option
        assert len(err.strip().splitlines()) == 1 if expected == 1 else ": error: argument --ip: " in last, (argv, err)


def test_the_largest_id_a_row_can_have_is_looked_up(cli_env):
    code, out, err = animetop("ip", "show", str(MAX_AUTO_ID))
    assert (code, out, err.strip()) == (1, "", f"animetop ip show: no IP with id {MAX_AUTO_ID}")
