"""``animetop``: the operator's command line, one module per group of commands."""

from __future__ import annotations

import sys

from lib.cli import alerts, collect, config, ips, messages, operations, pools
from lib.cli.common import COMMANDS
from lib.cli.parser import build_parser
from lib.core.settings import SettingsError

#: Importing these registers their commands.
COMMAND_MODULES = (alerts, collect, config, ips, messages, operations, pools)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args) or 0
    except SettingsError as e:
        print(f"animetop: bad setting {e}", file=sys.stderr)
        return 2
