"""``animetop``: the operator's command line, one module per group of commands."""

from __future__ import annotations

import os
import sys

from lib.cli import alerts, collect, config, forecast, ips, messages, operations, pools, segments
from lib.cli.common import COMMANDS
from lib.cli.errors import EXIT_UNAVAILABLE, explain
from lib.cli.parser import build_parser
from lib.core.settings import SettingsError

#: Importing these registers their commands.
COMMAND_MODULES = (alerts, collect, config, forecast, ips, messages, operations, pools, segments)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code = COMMANDS[args.command](args) or 0
        sys.stdout.flush()  # here, where a reader that went away is handled, not at exit
        return code
    except SettingsError as e:
        print(f"animetop: bad setting {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (``animetop … | head``): nothing more to say, and nothing to flush at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # as if killed by SIGPIPE, what a shell reports for such a writer
    except KeyboardInterrupt:
        return 130
    except Exception as e:
        line = _explain(e)
        if line is None:
            raise
        print(f"animetop {args.command}: {line}", file=sys.stderr)
        return EXIT_UNAVAILABLE


def _explain(error: Exception) -> str | None:
    from lib.core.settings import get_settings

    try:
        settings = get_settings()
    except Exception:  # the settings are what failed, or were never loaded
        settings = None
    return explain(error, settings)
