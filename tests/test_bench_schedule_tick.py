"""``python -m bench schedule_tick`` end to end on a small fleet: the tick and the budget's planning each against its
floor, on the costs as the worker stores them (a cost's stored form once grew a field the floor did not read)."""

from bench.schedule_tick import run

from .conftest import BROKER_DB, STATE_DB
from .helpers import empty_redis_databases


def test_a_small_run_reports_the_tick_and_the_planning(redis_server, monkeypatch, capsys):
    monkeypatch.setenv("BENCH_REDIS_URL", redis_server)
    monkeypatch.setenv("BENCH_REDIS_DBS", f"{STATE_DB},{BROKER_DB}")
    for variable in ("BROKER_URL", "REDIS_URL", "DATABASE_URL"):
        monkeypatch.delenv(variable, raising=False)
    empty_redis_databases(redis_server)
    run(scheduled=2000, due=100, repeat=1)
    out = capsys.readouterr().out
    assert "schedule_tick: 2,000 IPs scheduled, 100 due" in out
    assert "  tick (seconds)" in out and "  planning within the budget (seconds)" in out, out
