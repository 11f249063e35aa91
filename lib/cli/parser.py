"""The command line's arguments, all in one place."""

from __future__ import annotations

import argparse

from lib.cli.common import ip_id_option
from lib.market.rankings import LEADERBOARD_KINDS

DESCRIPTION = "animetop: the operator's command line"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="animetop", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("settings", help="print the effective settings (passwords redacted)")
    p.add_argument("--markdown", action="store_true", help="print the settings table (docs/reference/configuration.md)")

    p = sub.add_parser("db", help="database tasks")
    p.add_argument("action", choices=["init", "prune", "partitions"],
                   help="init: create all tables (idempotent); prune: prune to the retention horizon now; "
                        "partitions: list the hourly rows' monthly partitions (MySQL/MariaDB)")
    p.add_argument("--dry-run", action="store_true", help="prune: report what would go, remove nothing")
    p.add_argument("--drop-before", metavar="YYYY-MM",
                   help="partitions: drop the months before this one (never one the retention horizon keeps)")

    p = sub.add_parser("enqueue", help="send a message to an actor")
    p.add_argument("actor")
    p.add_argument("kwargs", nargs="?", default="{}", help='keyword arguments as a JSON object')
    p.add_argument("--delay-ms", type=int, default=None)

    p = sub.add_parser("deadletters", help="inspect and requeue dead-lettered messages")
    p.add_argument("action", choices=["list", "show", "requeue", "purge"])
    p.add_argument("ids", nargs="*", help="dead letter IDs (the ID column or the message id)")
    p.add_argument("--queue", help="only this queue")
    p.add_argument("--all", action="store_true", help="requeue: every dead letter (of --queue)")
    p.add_argument("--format", choices=["table", "json"], default="table")

    p = sub.add_parser("ip", help="manage the IPs (franchises) being tracked",
                       epilog="characters: `ip characters ID` lists IP ID's characters; `ip characters ID add NAME "
                              "[--alias A …]` adds one (or adds aliases to it); `… remove NAME`; `… import FILE` "
                              'replaces the list with a JSON file [{"name": …, "aliases": […]}]; `… export` prints '
                              "the list as such a file. A change segments the IP's stored listings again by the new "
                              "list. aliases: `ip aliases ID` lists IP ID's aliases; `ip aliases ID --alias A "
                              "--remove-alias B` changes them (its next crawl uses them). pin: `ip pin ID --every 6h` "
                              "crawls IP ID every 6 hours whatever its heat; `ip unpin ID` gives it back its "
                              "adaptive interval")
    p.add_argument("action", choices=["add", "list", "show", "disable", "enable", "import", "characters", "aliases",
                                      "pin", "unpin"])
    p.add_argument("value", nargs="?",
                   help="add: KEYWORD; show/disable/enable/characters/aliases/pin/unpin: ID; import: FILE")
    p.add_argument("operation", nargs="?", choices=["list", "add", "remove", "import", "export"],
                   help="characters: what to do with the list (default: list)")
    p.add_argument("operand", nargs="?", help="characters add/remove: NAME; characters import: FILE")
    p.add_argument("--alias", action="append", default=[], metavar="A",
                   help="add, aliases: another name the IP's listings' titles use (romaji, English, an "
                        "abbreviation; a listing counts for the IP only when its title names the keyword or an "
                        "alias); characters add: another name titles use for the character (repeatable; "
                        "--alias=-x for one that starts with a dash)")
    p.add_argument("--remove-alias", action="append", default=[], metavar="A",
                   help="aliases: an alias to remove (repeatable)")
    p.add_argument("--every", metavar="DURATION",
                   help="pin: the interval between the IP's crawls (30m, 6h, 2d; a minute to 30 days)")
    p.add_argument("--hours", type=int, default=24, help="show: the window's hours (default 24)")
    p.add_argument("--name", help="add: display name (default: the keyword)")
    p.add_argument("--weight", type=float, default=1.0, help="add: initial weight (default 1.0)")
    p.add_argument("--by", choices=["goods", "character"],
                   help="show: the IP's goods types or characters, each with the window's measures (docs: "
                        "concepts/measures, \"Segments\"; --hours up to RETENTION_WINDOW), instead of its hours")
    p.add_argument("--format", choices=["table", "json", "csv"], default="table",
                   help="show --format csv: the hourly series (with --by: the segments)")

    p = sub.add_parser("schedule", help="pause or resume sending crawls (the schedule itself is kept)")
    p.add_argument("action", choices=["pause", "resume", "status"],
                   help="pause: ticks send nothing until resume (crawls in flight finish); resume: the next tick "
                        "(within a minute, periodiq's) sends what is due; status: paused or not")

    p = sub.add_parser("pool", help="title/content pools")
    p.add_argument("action", choices=["load", "status"])
    p.add_argument("kind", nargs="?", help="titles or contents")
    p.add_argument("file", nargs="?", help="one text a line, CSV with a text column, or JSON lines")
    p.add_argument("--group", type=int)
    p.add_argument("--batch", type=int)

    p = sub.add_parser("collect", help="incremental collection tasks from the export API")
    p.add_argument("action", choices=["add", "list", "enable", "disable", "run"])
    p.add_argument("task", nargs="?", help="the source's task id (or our numeric id)")
    p.add_argument("--source", help="add: source name")
    p.add_argument("--batch-size", type=int, default=100)
    p.add_argument("--date-field", default="date")
    p.add_argument("--key-field", help="add: a stable id field of the rows (default: hash of the row)")
    p.add_argument("--filter-days", type=int, default=7)
    p.add_argument("--max-expired", type=int, default=3, help="add: expired batches in a row that end a first run")
    p.add_argument("--interval", type=int, default=3600, help="add: seconds between runs")

    p = sub.add_parser("status", help="queue depths, in-flight crawls, schedule, locks, recent errors")
    p.add_argument("--watch", action="store_true", help="refresh until Ctrl-C")
    p.add_argument("--interval", type=float, default=2.0)
    p.add_argument("--format", choices=["table", "json"], default="table")

    p = sub.add_parser("dashboard", help="serve the web dashboard and the HTTP API (/api/v1)")
    p.add_argument("--port", type=int, default=8790)
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (beyond loopback, put a TLS proxy in front)")

    p = sub.add_parser("demo", help="run the whole system offline against the simulator for a few minutes")
    p.add_argument("--minutes", type=float, default=1.5, help="how long the live phase runs (real minutes)")
    p.add_argument("--speed", type=float, default=120.0, help="simulated seconds per real second")
    p.add_argument("--ips", type=int, default=12, help="how many sample IPs (at most 12)")
    p.add_argument("--keep", action="store_true", help="leave the embedded Redis running afterwards")
    p.add_argument("--history", type=float, default=48.0, metavar="HOURS",
                   help="simulated hours of each market crawled before the live phase (heat needs a day before "
                        "its window; 0: none)")
    p.add_argument("--dashboard", action="store_true",
                   help="keep serving the dashboard over the demo's data after the crawl phase, until Ctrl-C")
    p.add_argument("--port", type=int, default=8790, help="the dashboard's port (0: a free one)")
    p.add_argument("--record", metavar="FILE",
                   help="write every search page the simulator served as JSON lines (ground truth to check "
                        "the numbers against)")
    p.add_argument("--market", choices=["deterministic", "realistic"], default="deterministic",
                   help="the simulator's market: the deterministic one, or the realistic market model")

    p = sub.add_parser("simulator", help="serve the local Mercari market simulator")
    p.add_argument("--port", type=int, default=8780)
    p.add_argument("--speed", type=float, default=1.0, help="simulated seconds per real second")
    p.add_argument("--market", choices=["deterministic", "realistic"], default="deterministic",
                   help="the deterministic market of the tests, or the realistic market model "
                        "(docs/concepts/simulator.md)")
    p.add_argument("--seed", type=int, default=0, help="the realistic market's seed (the same seed, the same market)")

    p = sub.add_parser("fake-export-api", help="serve a local fake of the export API (tests, demo)")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--task", action="append", default=[], help="NAME:ROWS, repeatable (default rows 1000)")
    p.add_argument("--bad-every", type=int, default=0, help="every Nth row malformed")

    p = sub.add_parser("alerts", help="market alerts and their notifications")
    p.add_argument("action", choices=["list", "test"])
    p.add_argument("url", nargs="?", help="test: a channel URL (https://…, slack+https://…, dingtalk+https://…)")
    p.add_argument("--ip", type=ip_id_option, metavar="ID")
    p.add_argument("--since", default="24h")
    p.add_argument("--format", choices=["table", "json"], default="table")

    p = sub.add_parser("leaderboard", help="IPs ranked by a market measure over a window")
    p.add_argument("--by", choices=LEADERBOARD_KINDS, default="heat")
    p.add_argument("--hours", type=int, default=24)
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--format", choices=["table", "json", "csv"], default="table")

    p = sub.add_parser("segments", help="goods types and characters of listing titles")
    p.add_argument("action", choices=["classify", "reapply", "board"],
                   help="classify: read titles on standard input, one a line; write one JSON object a line "
                        '({"title": …, "goods": [ids], "characters": [names]}); reapply: derive the stored '
                        "listings' segments again from their titles, after SEGMENTS_TAXONOMY changed (a change of "
                        "a character list does it for its IP); board: what sells across franchises, each goods type "
                        "(or character) over every "
                        "IP's listings")
    p.add_argument("--by", choices=["goods", "character"], default="goods", help="board: the kind of segment")
    p.add_argument("--hours", type=int, default=168, help="board: the window, at most RETENTION_WINDOW")
    p.add_argument("--format", choices=["table", "json", "csv"], default="table", help="board: the output")
    p.add_argument("--ip", type=ip_id_option, metavar="ID",
                   help="classify: match the characters of this IP (its list: animetop ip characters ID); "
                        "reapply: only this IP's listings")
    p.add_argument("--characters", metavar="FILE",
                   help='the characters to match, as JSON: [{"name": …, "aliases": […]}], instead of the list of '
                        "--ip (to try one before importing it)")
    p.add_argument("--taxonomy", metavar="FILE",
                   help="classify: goods types from this file instead of the configured ones (SEGMENTS_TAXONOMY, "
                        "by default the packaged lib/segments/goods_types.toml), to try a change")

    p = sub.add_parser("forecast", help="an IP's next 7 days forecast from its daily rows, with 80 %% and 95 %% "
                                        "intervals")
    p.add_argument("action", choices=["show", "rising", "backtest"],
                   help="show: the IP's stored forecast (or its segments', --by); rising: the IPs whose last "
                        "closed day ran furthest above its forecast; backtest: every IP's stored daily rows cut "
                        "at weekly origins, forecast and scored against what followed (MASE against the weekly "
                        "seasonal naive method, the intervals' coverage, scaled pinball loss)")
    p.add_argument("value", metavar="ID", nargs="?", help="show: the IP's id")
    p.add_argument("--cuts", type=int, default=4, help="backtest: weekly origins per IP (default 4)")
    p.add_argument("--by", choices=["outflow", "inflow", "goods", "character"],
                   help="show: the IP's goods types' or characters' forecasts instead of its own; rising: sales "
                        "(outflow, the default) or new listings (inflow)")
    p.add_argument("--of", choices=["ips", "goods", "character"], default="ips",
                   help="rising: rank the IPs (default), or their goods types or characters")
    p.add_argument("--limit", type=int, default=20, help="rising: how many rows")
    p.add_argument("--format", choices=["table", "json", "csv"], default="table",
                   help="the output (backtest: table or json)")

    p = sub.add_parser("run", help="run a process type of the Procfile, restarting it if it dies")
    p.add_argument("process_type", choices=["worker", "crawler", "scheduler"])
    p.add_argument("--actors", default="actors", help="module that declares the actors (default: actors)")

    p = sub.add_parser("redis", help="the embedded redis-server (when REDIS_URL is unset)")
    p.add_argument("action", choices=["start", "stop", "status"])
    return parser
