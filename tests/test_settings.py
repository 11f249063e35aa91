import subprocess
import sys

import pytest

from lib.core.redaction import redact_url
from lib.core.settings import SPECS, SettingsError, load_settings


def test_defaults_follow_the_documented_schedule(tmp_path):
    s = load_settings({"DATA_DIR": str(tmp_path)})
    assert s.scheduler_base_interval == 7200
    assert s.scheduler_min_interval == 3600
    assert s.scheduler_max_interval == 7200
    assert (s.scheduler_pages_on_sale, s.scheduler_pages_sold, s.scheduler_batch_size) == (5, 5, 50)
    assert (s.janitor_interval, s.janitor_timeout) == (300, 600)
    assert (s.analyzer_item_ttl_available, s.analyzer_item_ttl_sold) == (86400, 172800)
    assert s.max_retries == 3


def test_no_configuration_means_embedded_redis_and_sqlite(tmp_path):
    s = load_settings({"DATA_DIR": str(tmp_path)})
    assert s.embedded_redis
    assert s.state_redis_url == f"unix://{tmp_path}/redis.sock?db=1"
    assert s.broker_url_resolved == f"unix://{tmp_path}/redis.sock?db=0"
    assert s.database_url_resolved == f"sqlite:///{tmp_path}/animetop.sqlite3"


def test_state_and_broker_use_separate_redis_databases():
    s = load_settings({"REDIS_URL": "redis://10.0.0.5:6379"})
    assert s.state_redis_url == "redis://10.0.0.5:6379/1"
    assert s.broker_url_resolved == "redis://10.0.0.5:6379/0"
    s = load_settings({"REDIS_URL": "redis://h:6379/3", "BROKER_URL": "amqp://guest:guest@h:5672"})
    assert s.state_redis_url == "redis://h:6379/3"
    with pytest.raises(SettingsError) as e:
        load_settings({"REDIS_URL": "redis://h:6379/2", "BROKER_URL": "redis://h:6379/2"})
    assert e.value.name == "BROKER_URL"


def test_redis_cluster_url():
    from lib.core.redis_urls import parse_cluster_url

    s = load_settings({"REDIS_URL": "redis+cluster://u:p%40ss@10.0.0.1:7000,10.0.0.2:7001",
                       "BROKER_URL": "amqp://guest:guest@h:5672"})
    assert s.redis_cluster and not s.embedded_redis
    assert s.state_redis_url == "redis+cluster://u:p%40ss@10.0.0.1:7000,10.0.0.2:7001"  # database 0: no other
    parsed = parse_cluster_url(s.state_redis_url)
    assert parsed.nodes == (("10.0.0.1", 7000), ("10.0.0.2", 7001))
    assert (parsed.username, parsed.password, parsed.tls) == ("u", "p@ss", False)
    assert parse_cluster_url("rediss+cluster://[::1]:7000").nodes == (("::1", 7000),)
    assert redact_url(s.state_redis_url) == "redis+cluster://u:***@10.0.0.1:7000,10.0.0.2:7001"


@pytest.mark.parametrize("env, words", [
    ({"REDIS_URL": "redis+cluster://h:7000"}, "BROKER_URL: must be set when REDIS_URL is a Redis Cluster"),
    ({"BROKER_URL": "redis+cluster://h:7000"}, "BROKER_URL: redis+cluster:// is refused"),
    ({"REDIS_URL": "redis+cluster://h:7000", "BROKER_URL": "redis+cluster://h:7000"}, "BROKER_URL: redis+cluster"),
])
def test_the_broker_is_never_a_redis_cluster(env, words):
    with pytest.raises(SettingsError) as e:
        load_settings(env)
    assert e.value.name == "BROKER_URL"
    assert str(e.value).startswith(words)
    assert "Dramatiq's Redis broker does not support Redis Cluster" in str(e.value)


@pytest.mark.parametrize("url, words", [
    ("redis+cluster://h:7000/2", "only database 0"), ("redis+cluster://h:x", "must be host:port"),
    ("redis+cluster://h:7000,", "must be host:port"),
])
def test_bad_cluster_urls_are_refused(url, words):
    with pytest.raises(SettingsError, match=words) as e:
        load_settings({"REDIS_URL": url, "BROKER_URL": "amqp://h"})
    assert e.value.name == "REDIS_URL"


@pytest.mark.parametrize("env, name, words", [
    ({"SCHEDULER_MIN_INTERVAL": "abc"}, "SCHEDULER_MIN_INTERVAL", "duration"),
    ({"SCHEDULER_MIN_INTERVAL": "3h"}, "SCHEDULER_MIN_INTERVAL", "SCHEDULER_MAX_INTERVAL"),
    ({"SCHEDULER_BATCH_SIZE": "0"}, "SCHEDULER_BATCH_SIZE", "at least 1"),
    ({"MAX_RETRIES": "three"}, "MAX_RETRIES", "whole number"),
    ({"BROKER_URL": "kafka://h:9092"}, "BROKER_URL", "unknown URL scheme"),
    ({"DATABASE_URL": "postgres://h/db"}, "DATABASE_URL", "unknown URL scheme"),
    ({"DATABASE_URL": "mysql://root@h:3306"}, "DATABASE_URL", "name the database"),
    ({"LOG_LEVEL": "LOUD"}, "LOG_LEVEL", "DEBUG"),
])
def test_bad_values_name_the_variable(env, name, words):
    with pytest.raises(SettingsError) as e:
        load_settings(env)
    assert e.value.name == name
    assert words in str(e.value)


@pytest.mark.parametrize("argv", [["-m", "lib.cli", "settings"], ["-m", "dramatiq", "actors", "--processes", "1"]])
def test_a_bad_setting_stops_start_up_with_one_line(argv, tmp_path):
    env = {"PATH": "/usr/bin:/bin", "DATA_DIR": str(tmp_path), "SCHEDULER_MIN_INTERVAL": "abc"}
    result = subprocess.run([sys.executable, *argv], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if "SCHEDULER_MIN_INTERVAL" in line]
    assert lines == ["animetop: bad setting SCHEDULER_MIN_INTERVAL: expected a duration like 90s, 5m, 2h or 1d; "
                     "got 'abc'"]


def test_every_setting_is_documented_in_the_docs():
    from pathlib import Path

    page = (Path(__file__).parent.parent / "docs" / "reference" / "configuration.md").read_text()
    missing = [spec.name for spec in SPECS if f"`{spec.name}`" not in page]
    assert not missing
    # the page's table is what `animetop settings --markdown` prints, row for row
    table = subprocess.run([sys.executable, "-m", "lib.cli", "settings", "--markdown"], capture_output=True,
                           text=True, timeout=60, cwd=Path(__file__).parent.parent, check=True).stdout
    stale = [row for row in table.splitlines() if row not in page.splitlines()]
    assert stale == [], "regenerate the page with `python -m lib.docs.generate`"


def test_passwords_are_redacted():
    assert redact_url("mysql://u:secret@h:3306/db") == "mysql://u:***@h:3306/db"
    assert redact_url("redis://h:6379/1") == "redis://h:6379/1"


def _conforms(value, hint) -> bool:
    """Whether ``value`` is of the annotated type (the few shapes settings use), checked from the annotation."""
    import types
    import typing

    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_conforms(value, a) for a in args)
    if hint is type(None):
        return value is None
    if origin is tuple:
        return isinstance(value, tuple) and all(isinstance(v, args[0]) for v in value)
    if hint is float:
        return isinstance(value, float)
    return isinstance(value, hint) and not (hint is int and isinstance(value, bool))


def test_every_setting_is_a_typed_field_and_loads_as_its_type(tmp_path):
    import dataclasses
    import typing

    from lib.core.settings import Settings

    hints = typing.get_type_hints(Settings)
    names = {f.name for f in dataclasses.fields(Settings)}
    assert {spec.name.lower() for spec in SPECS} <= names
    full = {"REDIS_URL": "redis://127.0.0.1:6379/1", "BROKER_URL": "redis://127.0.0.1:6379/2",
            "PROXY_URLS": "http://127.0.0.1:3128", "NOTIFY_WEBHOOK_URLS": "https://example.invalid/hook",
            "CHROMIUM_PATH": "/usr/bin/chromium", "DATABASE_URL": f"sqlite:///{tmp_path}/x.sqlite3"}
    for environ in ({"DATA_DIR": str(tmp_path)}, {"DATA_DIR": str(tmp_path), **full}):
        settings = load_settings(environ)
        for name in names:
            assert hints[name] not in (typing.Any, object), name
            assert _conforms(getattr(settings, name), hints[name]), (name, getattr(settings, name), hints[name])


def test_settings_are_frozen_and_unknown_names_are_errors(tmp_path):
    import dataclasses

    settings = load_settings({"DATA_DIR": str(tmp_path)})
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.log_level = "DEBUG"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        settings.no_such_setting  # noqa: B018
    assert dataclasses.replace(settings, log_level="DEBUG").log_level == "DEBUG"
