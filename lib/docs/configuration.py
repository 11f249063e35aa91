"""``docs/reference/configuration.md`` from the settings' specs (``lib.core.settings.SPECS``): every variable with
its default and meaning, in declaration order. ``animetop settings --markdown`` prints the same table."""

from __future__ import annotations

from lib.core.settings import SPECS, Spec
from lib.docs.markdown import cell, code, table

INTRO = """\
Every setting is an environment variable, parsed and validated once at start-up; a bad value stops the
process with one line naming the variable (`animetop: bad setting SCHEDULER_MIN_INTERVAL: expected a
duration like 90s, 5m, 2h or 1d; got 'abc'`). Durations take `ms`, `s`, `m`, `h`, `d` or plain seconds.
`animetop settings` prints the effective values (passwords redacted); `animetop settings --markdown` prints
this table."""


def default_text(spec: Spec) -> str:
    return "(unset)" if spec.default is None else code(spec.default)


def settings_table() -> list[str]:
    """The table of every setting: variable, default, meaning."""
    return table(("Variable", "Default", "Meaning"),
                 ((code(spec.name), default_text(spec), cell(spec.doc)) for spec in SPECS))


def page() -> str:
    lines = ["# Configuration", "",
             "<!-- Generated from lib/core/settings.py by `python -m lib.docs.generate`: edit the settings' help "
             "texts there, not this file (tests/test_docs.py checks it). -->", "",
             INTRO, "", *settings_table()]
    return "\n".join(lines) + "\n"
