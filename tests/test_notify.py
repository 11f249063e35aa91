"""Alert notifications against a local HTTP receiver: each channel hears of an alert once."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import redis as redis_lib

from lib.alerts.notify import FAILED, SENT, Notifier
from lib.core.clock import naive_utc
from lib.core.redis_client import state_redis
from lib.core.settings import load_settings, use_settings
from lib.messaging.queue_stats import queue_counts
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.schedule import ScheduleStore
from models import AlertDelivery, IpAlert

from .helpers import run_cli, wait_for


class Receiver:
    """Webhook endpoints: /ok answers 200, /down 503, /bad 400; every request is kept."""

    def __init__(self):
        self.received: dict[str, list] = {}
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                receiver.received.setdefault(self.path, []).append(body)
                code = {"/ok": 200, "/ok2": 200, "/down": 503, "/bad": 400}.get(self.path, 404)
                raw = b'{"ok": true}' if code == 200 else b'{"error": "nope"}'
                self.send_response(code)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def count(self, path):
        return len(self.received.get(path, []))


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.server.shutdown()


def make_alert(settings, ip_id, rule="outflow_surge", value=42.0, hour=0):
    return IpAlert.create(ip_id=ip_id, rule=rule, hour_bucket=naive_utc(1_800_000_000 + hour * 3600), value=value,
                          threshold=20, message=f"outflow {value}", details="{}", created_at=naive_utc(time.time()))


@pytest.fixture
def wired(db, env, broker, app_actors, processed, receiver, start_worker):
    """The real notify_alert and deliver_alert on the test broker, with four channels."""
    settings = load_settings({**env, "NOTIFY_WEBHOOK_URLS": f"{receiver.url}/ok,slack+{receiver.url}/ok2,"
                                                            f"{receiver.url}/down,{receiver.url}/bad",
                              "NOTIFY_RETRY_DELAY": "200ms", "NOTIFY_RETRIES": "3"})
    use_settings(settings)  # what the actors read when they run
    ip = Catalogue(ScheduleStore(state_redis(settings)), settings).add("推しの子")
    start_worker(broker, threads=4, queues=["notify"])
    return settings, app_actors.notify_alert, ip


def statuses(alert_id):
    deliveries = AlertDelivery.select().where(AlertDelivery.alert_id == alert_id)
    return {d.channel.rsplit("/", 1)[1]: d.status for d in deliveries}


def test_one_alert_reaches_each_channel_once_failures_retried_4xx_not(wired, receiver, broker):
    settings, notify_alert, ip = wired
    alert = make_alert(settings, ip.id)
    notify_alert.send(alert.id)
    wait_for(lambda: statuses(alert.id).get("down") == FAILED, timeout=30, what="the down channel to give up")
    broker.join("notify", timeout=20_000)
    assert receiver.count("/ok") == 1 and receiver.count("/ok2") == 1
    assert receiver.count("/down") == 1 + settings.notify_retries  # retried, then given up
    assert receiver.count("/bad") == 1  # a 4xx is not retried
    assert statuses(alert.id) == {"ok": SENT, "ok2": SENT, "down": FAILED, "bad": FAILED}
    generic, slack = receiver.received["/ok"][0], receiver.received["/ok2"][0]
    assert generic["alert"]["rule"] == "outflow_surge" and generic["alert"]["ip_name"] == "推しの子"
    assert "推しの子" in generic["text"] and f"/ip/{ip.id}" in generic["text"]
    assert set(slack) == {"text"}


def test_same_state_within_the_window_is_not_sent_changed_state_is(wired, receiver, broker, processed):
    settings, notify_alert, ip = wired
    first = make_alert(settings, ip.id)
    notify_alert.send(first.id)
    wait_for(lambda: receiver.count("/ok") == 1, what="the first delivery")
    notify_alert.send(first.id)  # redelivered: same alert, same state
    # it had its chance: both ran, and every delivery either of them sent (with retries) has run
    wait_for(lambda: processed.processed["notify_alert"] == 2, what="the redelivered alert handled")
    wait_for(lambda: not any(queue_counts(broker, "notify").values()), timeout=30, what="the notify queue drained")
    assert receiver.count("/ok") == 1
    changed = make_alert(settings, ip.id, hour=1, value=60.0)  # the next hour: a new state
    notify_alert.send(changed.id)
    wait_for(lambda: receiver.count("/ok") == 2, what="the changed state delivered")


def test_redis_down_still_delivers(db, env, receiver):
    settings = load_settings({**env, "NOTIFY_WEBHOOK_URLS": f"{receiver.url}/ok"})
    ip = Catalogue(ScheduleStore(state_redis(settings)), settings).add("ダンジョン飯")
    alert = make_alert(settings, ip.id)
    notifier = Notifier(settings, redis_lib.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2))
    assert notifier.admit(alert) is True  # rather a duplicate than a lost alert
    assert notifier.deliver(alert.id, 0, attempt=1) == SENT
    assert receiver.count("/ok") == 1
    assert notifier.deliver(alert.id, 0, attempt=1) == SENT and receiver.count("/ok") == 1  # recorded: not resent


def test_alerts_cli(db, env, receiver, database_url):
    cli_env = {**env, "DATABASE_URL": database_url}
    assert run_cli(cli_env, "db", "init").returncode == 0
    result = run_cli(cli_env, "alerts", "test", f"dingtalk+{receiver.url}/ok")
    assert result.returncode == 0, result.stderr
    assert receiver.received["/ok"][0]["msgtype"] == "text"
    assert run_cli(cli_env, "alerts", "test", f"{receiver.url}/bad").returncode == 1
    assert "0 alert(s)" in run_cli(cli_env, "alerts", "list", "--since", "24h").stdout


def test_alerts_no_channel_has_heard_of_are_pending(db, env):
    from lib.alerts.notify import Channel, pending_alerts

    settings = load_settings(env)
    ip = Catalogue(ScheduleStore(state_redis(settings)), settings).add("薬屋のひとりごと")
    a, b = make_alert(settings, ip.id), make_alert(settings, ip.id, hour=1)
    since = naive_utc(time.time() - 3600)
    assert pending_alerts(ip.id, since) == [a.id, b.id]
    Notifier(settings, None).record(a.id, Channel.parse("https://example.invalid/hook"), SENT)
    assert pending_alerts(ip.id, since) == [b.id]  # sent again after a crash only if nobody heard of it
