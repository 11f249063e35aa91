"""``python -m bench [NAME ...] [OPTIONS]``: every benchmark (or the named ones), each as ratios against a floor
measured in the same run. Options go to a single named benchmark: ``python -m bench load --ips 100,1000``,
``python -m bench dashboard --db /tmp/market.sqlite3`` (also ``leaderboard`` and ``days``: keep the filled
database and reuse it next time; ``--ips 10000``: the market's size; ``--days N``: its windows' days).
``python -m bench soak --hours 100 --ips 12`` (each process type's memory over a long run) runs only when named."""

import sys

from . import (
    accuracy,
    collect,
    crawl,
    dashboard,
    days,
    encoding,
    estimates,
    forecast,
    forecast_refresh,
    leaderboard,
    load,
    long_windows,
    plan,
    pool,
    process_result,
    relevance,
    schedule_tick,
    segments,
    segments_board,
    soak,
    storage,
)

BENCHMARKS = {"encoding": encoding.main, "schedule_tick": schedule_tick.main, "process_result": process_result.main,
              "pool": pool.main, "collect": collect.main, "crawl": crawl.main, "leaderboard": leaderboard.main,
              "dashboard": dashboard.main, "days": days.main, "load": load.main,
              "storage": storage.main, "long_windows": long_windows.main, "segments": segments.main,
              "segments_board": segments_board.main, "soak": soak.main, "accuracy": accuracy.main,
              "relevance": relevance.main, "estimates": estimates.main, "plan": plan.main,
              "forecast": forecast.main, "forecast_refresh": forecast_refresh.main}
#: Benchmarks run only when named: a soak takes half an hour, accuracy, relevance, estimates, plan and forecast
#: simulate days of a market.
ONLY_NAMED = {"soak", "accuracy", "relevance", "estimates", "plan", "forecast", "forecast_refresh"}

#: Benchmarks that take options (``process_result``: ``--db mysql://…``; ``load``, ``storage``: their scales;
#: ``leaderboard``, ``dashboard``, ``days``, ``long_windows``, ``segments_board``: ``--db PATH``, ``--ips N``; the first
#: three ``--days N`` too).
WITH_OPTIONS = {"process_result": process_result.main, "load": load.main, "storage": storage.main,
                "leaderboard": leaderboard.main,
                "dashboard": dashboard.main, "days": days.main, "long_windows": long_windows.main,
                "segments_board": segments_board.main, "soak": soak.main, "accuracy": accuracy.main,
                "estimates": estimates.main, "plan": plan.main, "forecast": forecast.main,
                "forecast_refresh": forecast_refresh.main}


def main(argv: list[str]) -> int:
    names = []
    while argv and argv[0] in BENCHMARKS:
        names.append(argv.pop(0))
    if argv and argv[0] in ("-h", "--help") and not names:
        print(__doc__ + "\nbenchmarks: " + ", ".join(BENCHMARKS))
        return 0
    if argv and (len(names) != 1 or names[0] not in WITH_OPTIONS):
        print(f"python -m bench: unknown benchmark or option {argv[0]!r}; benchmarks: {', '.join(BENCHMARKS)} "
              f"(options only after one of {', '.join(WITH_OPTIONS)})", file=sys.stderr)
        return 2
    failed = 0
    for name in names or [name for name in BENCHMARKS if name not in ONLY_NAMED]:
        code = WITH_OPTIONS[name](argv) if name in WITH_OPTIONS else BENCHMARKS[name]()
        failed += bool(code)
        print()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
