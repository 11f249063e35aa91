"""Credentials in URLs never reach logs, ``status``, ``settings``, dead-letter reasons or error messages."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import redis

from lib.core.clock import naive_utc
from lib.core.redaction import redact_text, redact_url
from lib.core.settings import load_settings, use_settings

from ..conftest import MYSQL_URL, need
from ..helpers import recreate_mysql_database, run_cli, wait_for
from .conftest import call_cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def redis_with_user(redis_server, creds):
    """A Redis user with a password on the test server (ACL), removed afterwards."""
    if not redis_server.startswith("redis://"):
        pytest.skip("needs Redis over TCP for a user with a password")
    admin = redis.Redis.from_url(redis_server)
    admin.execute_command("ACL", "SETUSER", creds.redis_user, "on", f">{creds.redis_pw}", "~*", "&*", "+@all")
    host = redis_server[len("redis://"):]
    yield f"redis://{creds.redis_user}:{creds.redis_pw}@{host}"
    admin.execute_command("ACL", "DELUSER", creds.redis_user)
    admin.close()


@pytest.fixture
def mysql_with_user(creds):
    """The test database, reachable by a MariaDB/MySQL user with a password, removed afterwards."""
    need(MYSQL_URL, "MySQL/MariaDB")
    conn, name = recreate_mysql_database(MYSQL_URL)
    with conn.cursor() as cur:
        for host in ("%", "localhost"):
            cur.execute("CREATE USER %s@%s IDENTIFIED BY %s", (creds.db_user, host, creds.db_pw))
            cur.execute(f"GRANT ALL PRIVILEGES ON `{name}`.* TO %s@%s", (creds.db_user, host))
    parts = urlsplit(MYSQL_URL)
    yield f"mysql://{creds.db_user}:{creds.db_pw}@{parts.hostname}:{parts.port or 3306}/{name}"
    with conn.cursor() as cur:
        for host in ("%", "localhost"):
            cur.execute("DROP USER IF EXISTS %s@%s", (creds.db_user, host))
    conn.close()


@pytest.fixture
def secret_env(env, creds, redis_with_user, mysql_with_user):
    """Every URL setting with credentials in it, pointing at real servers where one exists."""
    from .. import conftest

    return {
        **env,
        "REDIS_URL": f"{redis_with_user}/{conftest.STATE_DB}",
        "BROKER_URL": f"{redis_with_user}/{conftest.BROKER_DB}",
        "DATABASE_URL": mysql_with_user,
        "PROXY_URLS": f"http://puser:{creds.proxy_pw}@127.0.0.1:9,socks5://{creds.proxy_token}@127.0.0.1:9",
        "NOTIFY_WEBHOOK_URLS": f"http://hookuser:{creds.hook_pw}@127.0.0.1:9/hook,"
                               f"dingtalk+http://127.0.0.1:9/robot/send?access_token={creds.ding_token},"
                               f"slack+http://127.0.0.1:9/services/T000/B000/{creds.slack_token}",
        "COLLECT_API_PASSWORD": creds.api_pw,
    }


def test_settings_db_init_and_status_show_hosts_but_no_credentials(secret_env, creds):
    init = run_cli(secret_env, "db", "init")
    assert init.returncode == 0, init.stderr
    assert f"mysql://{creds.db_user}:***@127.0.0.1:3306/" in init.stdout
    shown = run_cli(secret_env, "settings")
    assert shown.returncode == 0, shown.stderr
    for redacted in (f"REDIS_URL=redis://{creds.redis_user}:***@127.0.0.1:",
                     f"DATABASE_URL=mysql://{creds.db_user}:***@",
                     "PROXY_URLS=http://puser:***@127.0.0.1:9,socks5://***@127.0.0.1:9", "access_token=***",
                     "/services/T000/B000/***", "http://hookuser:***@127.0.0.1:9/hook", "COLLECT_API_PASSWORD=***",
                     f"# broker:      redis://{creds.redis_user}:***@127.0.0.1:"):
        assert redacted in shown.stdout
    table, as_json = run_cli(secret_env, "status"), run_cli(secret_env, "status", "--format", "json")
    assert table.returncode == 0 and as_json.returncode == 0, table.stderr + as_json.stderr
    assert json.loads(as_json.stdout)["broker"].startswith(f"redis://{creds.redis_user}:***@127.0.0.1:")
    creds.assert_absent(init.stdout, init.stderr, shown.stdout, shown.stderr, table.stdout, table.stderr,
                        as_json.stdout, as_json.stderr)


def test_errors_about_unreachable_or_refusing_services_carry_no_credentials(secret_env, creds):
    runs = [
        # Redis down (nothing listens on port 1): status fails with the reason, not the password
        run_cli({**secret_env, "REDIS_URL": f"redis://u:{creds.redis_pw}@127.0.0.1:1/8",
                 "BROKER_URL": f"redis://u:{creds.redis_pw}@127.0.0.1:1/9"}, "status"),
        # the database refuses the password
        run_cli({**secret_env, "DATABASE_URL": secret_env["DATABASE_URL"].replace(creds.db_pw, creds.api_pw)},
                "db", "init"),
        # RabbitMQ refuses (or is not there): enqueue fails
        run_cli({**secret_env, "BROKER_URL": f"amqp://nobody:{creds.amqp_pw}@127.0.0.1:5672/%2F"},
                "enqueue", "ping", '{"note": "x"}'),
        # bad settings are named without echoing the secret
        run_cli({**secret_env, "PROXY_URLS": f"ftp://puser:{creds.proxy_pw}@127.0.0.1:21"}, "settings"),
        run_cli({**secret_env, "NOTIFY_WEBHOOK_URLS": f"ftp://h/x?token={creds.ding_token}"}, "settings"),
        run_cli({**secret_env, "COLLECT_API_URL": f"http://api:{creds.api_pw}@127.0.0.1:8765"}, "settings"),
        run_cli({**secret_env, "DASHBOARD_URL": f"https://{creds.hook_pw}@dash.example"}, "settings"),
    ]
    for result in runs:
        assert result.returncode != 0, result.stdout
        creds.assert_absent(result.stdout, result.stderr)
    assert "127.0.0.1:1" in runs[0].stderr                            # the host is there to diagnose with
    assert "Access denied" in runs[1].stderr
    assert "bad setting PROXY_URLS: proxy 'ftp://puser:***@127.0.0.1:21'" in runs[3].stderr
    assert "bad setting COLLECT_API_URL: must not carry credentials" in runs[5].stderr
    assert "COLLECT_API_USERNAME and COLLECT_API_PASSWORD" in runs[5].stderr
    assert "bad setting DASHBOARD_URL" in runs[6].stderr


@pytest.mark.slow  # a worker process to dead-letter through; the redaction it relies on is tested above
def test_worker_logs_dead_letter_reasons_and_status_carry_no_credentials(secret_env, creds, tmp_path):
    """A real worker process (`animetop run worker`, DEBUG logging) handles messages that quote credentialed
    URLs: its log lines and the dead-letter reasons `status` shows are redacted."""
    from dramatiq import Message

    from lib.messaging.broker import build_broker
    from lib.messaging.dead_letters import DeadLetters

    env = {**secret_env, "LOG_LEVEL": "DEBUG", "WORKER_PROCESSES": "1", "WORKER_THREADS": "2",
           "WORKER_SHUTDOWN_TIMEOUT": "5s", "METRICS_PORT": str(20000 + os.getpid() % 20000)}
    assert run_cli(env, "db", "init").returncode == 0
    settings = load_settings(env)
    broker = build_broker(settings)
    leaky = f"{secret_env['REDIS_URL']} and {secret_env['DATABASE_URL']}"
    log = (tmp_path / "worker.log").open("w+")
    worker = subprocess.Popen([sys.executable, "-m", "lib.cli", "run", "worker"], cwd=ROOT, stdout=log,
                              stderr=subprocess.STDOUT, env={"PATH": os.environ.get("PATH", ""), **env})
    try:
        broker.enqueue(Message(queue_name="maintenance", actor_name="ping", args=(), kwargs={"note": leaky},
                               options={}))
        # arguments that do not fit ping(note: str): dead-lettered, and the reason quotes the value
        broker.enqueue(Message(queue_name="maintenance", actor_name="ping", args=(), kwargs={"note": [leaky]},
                               options={}))
        letters = DeadLetters.for_broker(broker, broker.reasons)
        dead = wait_for(lambda: letters.list("maintenance"), timeout=60, what="the dead letter")
        wait_for(lambda: "pong" in (tmp_path / "worker.log").read_text(), timeout=30, what="the pong line")
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
        log.close()
    output = (tmp_path / "worker.log").read_text()
    assert "pong" in output and f"redis://{creds.redis_user}:***@127.0.0.1" in output
    assert f"mysql://{creds.db_user}:***@127.0.0.1" in output
    assert "must be str" in dead[0].reason and f"{creds.redis_user}:***@" in dead[0].reason
    table, as_json = run_cli(env, "status"), run_cli(env, "status", "--format", "json")
    listed = run_cli(env, "deadletters", "list", "--format", "json")
    assert "must be str" in table.stdout and "must be str" in json.loads(as_json.stdout)["recent_errors"][0]["reason"]
    creds.assert_absent(output, dead[0].reason, table.stdout, table.stderr, as_json.stdout, listed.stdout)
    broker.close()


class Receiver:
    """A webhook receiver on loopback: /hook wants HTTP Basic auth, /robot/send a token."""

    def __init__(self, user: str, password: str, token: str) -> None:
        receiver = self
        self.hits: list[tuple[str, str | None]] = []
        expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.hits.append((self.path, self.headers.get("Authorization")))
                ok = (self.path == "/hook" and self.headers.get("Authorization") == expected) or \
                    self.path == f"/robot/send?access_token={token}"
                self.send_response(200 if ok else 401)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_alert_channels_are_stored_logged_and_listed_without_their_secrets(db, database_url, env, creds, caplog):
    from lib.alerts.notify import SENT, Notifier
    from lib.core.redis_client import state_redis
    from models import AlertDelivery, IpAlert

    receiver = Receiver("hookuser", creds.hook_pw, creds.ding_token)
    try:
        base = f"127.0.0.1:{receiver.port}"
        urls = [f"http://hookuser:{creds.hook_pw}@{base}/hook",
                f"dingtalk+http://{base}/robot/send?access_token={creds.ding_token}",
                f"slack+http://127.0.0.1:9/services/T000/B000/{creds.slack_token}"]
        settings = load_settings({**env, "DATABASE_URL": database_url, "NOTIFY_RETRIES": "0", "NOTIFY_TIMEOUT": "3s",
                                  "NOTIFY_WEBHOOK_URLS": ",".join(urls)})
        use_settings(settings)
        alert = IpAlert.create(ip_id=1, rule="outflow_surge", hour_bucket=naive_utc(1_800_000_000), value=42,
                               threshold=20, message="outflow 42", created_at=naive_utc(time.time()))
        notifier = Notifier(settings, state_redis(settings))
        with caplog.at_level("DEBUG"):
            outcomes = [notifier.deliver(alert.id, i, attempt=1) for i in range(3)]
            code, out, err = call_cli("alerts", "list", "--format", "json")
            test_code, test_out, test_err = call_cli("alerts", "test", settings.notify_webhook_urls[1])
        assert outcomes == [SENT, SENT, "failed"]
        assert [path for path, _ in receiver.hits][:2] == ["/hook", f"/robot/send?access_token={creds.ding_token}"]
        assert receiver.hits[0][1] is not None              # the password went as HTTP Basic auth, not to DNS
        assert code == 0 and test_code == 0, err + test_err
        channels = sorted(d.channel for d in AlertDelivery.select())
        assert channels == sorted([f"http://hookuser:***@{base}/hook", f"http://{base}/robot/send?access_token=***",
                                   "http://127.0.0.1:9/services/T000/B000/***"])
        assert sorted(json.loads(out)[0]["deliveries"]) == channels
        creds.assert_absent(out, err, test_out, test_err, caplog.text,
                            "\n".join(r.getMessage() for r in caplog.records), "\n".join(channels))
    finally:
        receiver.stop()
        use_settings(None)


def test_proxy_credentials_stay_out_of_logs(creds, caplog):
    from lib.crawling.page_fetch import ErrorKind
    from lib.crawling.proxies import ProxyRotator, health_check

    proxies = (f"http://puser:{creds.proxy_pw}@127.0.0.1:9", f"socks5://{creds.proxy_token}@127.0.0.1:9",
               f"https://puser:{creds.proxy_pw}@127.0.0.1:9")
    with caplog.at_level("DEBUG"):
        assert health_check(proxies[0], "http://127.0.0.1:9/", timeout=2) is False   # a real, failing check
        rotator = ProxyRotator(proxies, switch_after=1, cooldown=0, check_url="http://x",
                               check=lambda proxy, url: proxy == proxies[2])
        assert rotator.record(ErrorKind.TIMEOUT) == proxies[2]
        rotator.check = lambda proxy, url: False
        assert rotator.record(ErrorKind.BLOCKED) is False
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "http://puser:***@127.0.0.1:9" in text and "https://puser:***@127.0.0.1:9" in text
    creds.assert_absent(text)


def test_log_lines_and_tracebacks_are_redacted_by_the_process_formatter():
    import logging

    from lib.app import LOG_FORMAT, RedactingFormatter

    formatter = RedactingFormatter(logging.Formatter(LOG_FORMAT))
    try:
        raise ConnectionError("cannot reach amqp://user:s3cr3tpw@rabbit:5672/%2F")
    except ConnectionError:
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "connecting to %s", ("redis://:s3cr3tpw@h:6379/1",),
                                   sys.exc_info())
    line = formatter.format(record)
    assert "s3cr3tpw" not in line
    assert "amqp://user:***@rabbit:5672/%2F" in line and "redis://:***@h:6379/1" in line and "Traceback" in line


@pytest.mark.parametrize("url, shown", [
    ("mysql://u:secret@h:3306/db", "mysql://u:***@h:3306/db"),
    ("redis://:secret@h:6379/1", "redis://:***@h:6379/1"),
    ("https://secret@h/x", "https://***@h/x"),                       # a token given as the user name
    ("https://oapi.dingtalk.com/robot/send?access_token=secret&x=1",
     "https://oapi.dingtalk.com/robot/send?access_token=***&x=1"),
    ("slack+https://hooks.slack.com/services/T0/B0/abcdefgh12345678",
     "slack+https://hooks.slack.com/services/T0/B0/***"),
    ("https://h/api?api_key=secret&sig=secret", "https://h/api?api_key=***&sig=***"),
    ("redis://h:6379/1", "redis://h:6379/1"),
    ("https://jp.mercari.com/search?keyword=%E9%AC%BC&status=on_sale&author=x",    # nothing secret here
     "https://jp.mercari.com/search?keyword=%E9%AC%BC&status=on_sale&author=x"),
    ("https://h/x?accessToken=secret&key=secret&client_secret=secret",
     "https://h/x?accessToken=***&key=***&client_secret=***"),
    ("redis://user:secr", "redis://user:***"),                      # cut short in a truncated message
    ("http://[::1]:8080/x", "http://[::1]:8080/x"),
    ("unix:///tmp/animetop-test-redis-1a2b3c4d5e6f7a8b/redis.sock?db=1",
     "unix:///tmp/animetop-test-redis-1a2b3c4d5e6f7a8b/redis.sock?db=1"),
    ("sqlite:////var/lib/animetop/animetop.sqlite3", "sqlite:////var/lib/animetop/animetop.sqlite3"),
])
def test_redact_url(url, shown):
    assert redact_url(url) == shown
    assert redact_text(f"error: {url} failed") == f"error: {shown} failed"


# == 3. msgpack decoding has limits ===========================================================================
