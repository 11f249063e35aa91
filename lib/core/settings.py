"""Every setting of the application, read from the environment once.

Each setting is declared exactly once in ``SPECS`` (name, default, parser,
meaning); the README's configuration table and ``animetop settings`` are
printed from it. Nothing else in the code base reads ``os.environ`` for
configuration: everything asks ``get_settings()``.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping
from urllib.parse import parse_qs, urlsplit


class SettingsError(ValueError):
    """A setting has a value the application cannot run with."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"{name}: {problem}")
        self.name = name
        self.problem = problem


# -- parsers ---------------------------------------------------------------

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}


def parse_duration(raw: str) -> float:
    """``"90s"``, ``"5m"``, ``"2h"``, ``"1d"``, ``"250ms"`` or plain seconds → seconds."""
    match = _DURATION.match(raw)
    if not match:
        raise ValueError(f"expected a duration like 90s, 5m, 2h or 1d; got {raw!r}")
    seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    if seconds <= 0:
        raise ValueError(f"must be longer than zero; got {raw!r}")
    return seconds


def _number(kind: type, *, at_least: float | None = None, above: float | None = None) -> Callable[[str], Any]:
    """A parser of whole numbers (``int``) or numbers (``float``) with a lower bound."""
    noun = "a whole number" if kind is int else "a number"

    def parse(raw: str):
        try:
            value = kind(raw.strip())
        except ValueError:
            raise ValueError(f"expected {noun}; got {raw!r}") from None
        if above is not None and not value > above:
            raise ValueError(f"must be above {above:g}; got {raw!r}")
        if at_least is not None and value < at_least:
            bound = "must not be negative" if at_least == 0 else f"must be at least {at_least:g}"
            raise ValueError(f"{bound}; got {raw!r}")
        return value

    return parse


_positive_int = _number(int, at_least=1)
_non_negative_int = _number(int, at_least=0)
_positive_float = _number(float, above=0)
_non_negative_float = _number(float, at_least=0)


def _timezone(raw: str) -> str:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(raw.strip())
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {raw!r}; expected a name like Asia/Tokyo or UTC") from None
    return raw.strip()


def _bool(raw: str) -> bool:
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"expected true or false; got {raw!r}")


def _regex(raw: str) -> str:
    try:
        re.compile(raw)
    except re.error as e:
        raise ValueError(f"not a regular expression: {e}") from None
    return raw


def _proxy_list(raw: str) -> tuple[str, ...]:
    proxies = tuple(p.strip() for p in raw.split(",") if p.strip())
    for proxy in proxies:
        if urlsplit(proxy).scheme not in ("http", "https", "socks5"):
            raise ValueError(f"proxy {redact_url(proxy)!r} must start with http://, https:// or socks5://")
    return proxies


WEBHOOK_SCHEMES = ("http", "https", "slack+https", "slack+http", "dingtalk+https", "dingtalk+http")


def _webhook_list(raw: str) -> tuple[str, ...]:
    urls = tuple(u.strip() for u in raw.split(",") if u.strip())
    for url in urls:
        if urlsplit(url).scheme not in WEBHOOK_SCHEMES:
            raise ValueError(
                f"webhook {redact_url(url)!r} must start with https://, slack+https:// or dingtalk+https://")
    return urls


def _sink(raw: str) -> str:
    value = raw.strip()
    if value == "database" or (value.startswith("actor:") and len(value) > len("actor:")):
        return value
    raise ValueError(f"expected database or actor:NAME; got {raw!r}")


def _log_level(raw: str) -> str:
    level = raw.strip().upper()
    if level not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
        raise ValueError(f"expected DEBUG, INFO, WARNING, ERROR or CRITICAL; got {raw!r}")
    return level


def _url(*schemes: str, no_credentials: str | None = None) -> Callable[[str], str]:
    """A URL parser. ``no_credentials``: the URL must carry no user or password (it is shown to people, or
    there is a proper setting for them), and this says why."""
    def parse(raw: str) -> str:
        raw = raw.strip()
        try:
            parts = urlsplit(raw)
        except ValueError as e:
            raise ValueError(f"not a URL: {e}") from None
        if parts.scheme not in schemes:
            allowed = ", ".join(f"{s}://" for s in schemes)
            scheme = parts.scheme
            raise ValueError(f"unknown URL scheme {scheme + '://' if scheme else '(none)'}; expected one of {allowed}")
        if no_credentials and "@" in parts.netloc:
            raise ValueError(f"must not carry credentials ({redact_url(raw)}): {no_credentials}")
        return raw

    return parse


def _path(raw: str) -> str:
    if not raw.strip():
        raise ValueError("must not be empty")
    return raw


# -- the settings ----------------------------------------------------------

@dataclass(frozen=True)
class Spec:
    """One environment variable: its name, default (raw text) and meaning."""

    name: str
    default: str | None
    parse: Callable[[str], Any]
    doc: str


REDIS_SCHEMES = ("redis", "rediss", "unix")

SPECS: tuple[Spec, ...] = (
    # where things live
    Spec("DATA_DIR", "./var", _path, "Directory of the embedded Redis and SQLite data."),
    Spec("REDIS_URL", None, _url(*REDIS_SCHEMES),
         "Redis for application state (schedule, item states, locks, idempotency). Unset: an embedded "
         "redis-server under DATA_DIR. Database 1 unless the URL names one."),
    Spec("BROKER_URL", None, _url(*REDIS_SCHEMES, "amqp", "amqps", "stub"),
         "Message broker: redis://… (Dramatiq RedisBroker) or amqp://… (RabbitmqBroker); stub:// is Dramatiq's "
         "in-memory StubBroker, for tests. Unset: database 0 of the Redis server of REDIS_URL."),
    Spec("DATABASE_URL", None, _url("sqlite", "mysql"),
         "sqlite:///path or mysql://user:pass@host:port/db. Unset: SQLite at DATA_DIR/animetop.sqlite3 (WAL)."),
    Spec("LOG_LEVEL", "INFO", _log_level, "Log level of every process."),
    # scheduler (seed 000 appendix A)
    Spec("SCHEDULER_BASE_INTERVAL", "2h", parse_duration, "Crawl interval of an IP of weight 1.0."),
    Spec("SCHEDULER_MIN_INTERVAL", "1h", parse_duration, "Shortest crawl interval (hot IPs)."),
    Spec("SCHEDULER_MAX_INTERVAL", "2h", parse_duration, "Longest crawl interval (cold IPs)."),
    Spec("SCHEDULER_PAGES_ON_SALE", "5", _positive_int, "On-sale search pages crawled per IP."),
    Spec("SCHEDULER_PAGES_SOLD", "5", _positive_int, "Sold search pages crawled per IP."),
    Spec("SCHEDULER_BATCH_SIZE", "50", _positive_int, "Due IPs pushed per batch."),
    Spec("SCHEDULER_BACKPRESSURE_THRESHOLD", "25", _positive_int,
         "Crawl-queue depth above which the scheduler stops pushing."),
    Spec("SCHEDULER_STARTUP_SPREAD", "10m", parse_duration,
         "Window over which overdue IPs are spread when the schedule is rebuilt from the database."),
    Spec("JANITOR_INTERVAL", "5m", parse_duration, "How often stale in-flight markers are swept."),
    Spec("JANITOR_TIMEOUT", "10m", parse_duration, "Age after which an in-flight marker counts as stuck."),
    Spec("ANALYZER_ITEM_TTL_AVAILABLE", "24h", parse_duration, "Lifetime of an on-sale item's state."),
    Spec("ANALYZER_ITEM_TTL_SOLD", "48h", parse_duration, "Lifetime of a sold item's state."),
    Spec("WEIGHT_MIN", "0.25", _positive_float, "Lowest weight an IP can drift to (longest interval)."),
    Spec("WEIGHT_MAX", "4.0", _positive_float, "Highest weight an IP can reach (shortest interval)."),
    Spec("DISPLAY_TZ", "Asia/Tokyo", _timezone, "Time zone hours are shown in (they are stored in UTC)."),
    Spec("CACHE_TTL", "10m", parse_duration, "Lifetime of leaderboard and IP-detail caches."),
    # crawler (seed 000 §3)
    Spec("MERCARI_BASE_URL", "https://jp.mercari.com",
         _url("http", "https", no_credentials="pages and logs show it; an authenticated proxy goes in PROXY_URLS"),
         "Site the crawler searches (the simulator's URL in tests and the demo)."),
    Spec("MERCARI_API_PATTERN", r"/v2/entities:search", _regex,
         "Regular expression of the search API's URL, whose responses the crawler captures."),
    Spec("CHROMIUM_PATH", None, str, "Chromium binary; unset: found in the usual system paths."),
    Spec("CHROMIUM_NO_SANDBOX", "false", _bool,
         "Turn Chromium's OS-level sandbox off (`--no-sandbox`). Required as root (containers); see Security in the "
         "README."),
    Spec("PROXY_URLS", "", _proxy_list, "Comma-separated HTTP(S)/SOCKS5 proxies the crawler rotates through."),
    Spec("PROXY_SWITCH_AFTER", "10", _positive_int, "Consecutive timeout/blocked/network failures before switching."),
    Spec("PROXY_COOLDOWN", "30m", parse_duration, "Least time between two proxy switches."),
    Spec("CRAWL_PAGE_TIMEOUT", "30s", parse_duration, "Time limit of one search page."),
    Spec("CRAWL_MAX_PAGES", "2", _positive_int, "Browser pages open at once per crawler process."),
    Spec("CRAWL_BROWSER_MAX_CRAWLS", "50", _positive_int, "Crawls before the browser is restarted (draining)."),
    Spec("CRAWL_BLOCK_RESOURCES", "true", _bool, "Drop images, fonts, media and analytics requests."),
    # title/content pools (seed 002)
    Spec("POOL_SIZE", "5000", _positive_int, "Rows a title/content pool is filled up to."),
    Spec("POOL_THRESHOLD", "1000", _positive_int, "A pool shorter than this is refilled."),
    Spec("POOL_MARK_USED_INTERVAL", "500ms", parse_duration,
         "How often a consumer sends the ids it handed out to be marked used (one batched message)."),
    # collection from an export API (seed 004)
    Spec("COLLECT_API_URL", "http://127.0.0.1:8765",
         _url("http", "https", no_credentials="set COLLECT_API_USERNAME and COLLECT_API_PASSWORD instead"),
         "Base URL of the export API (Octoparse OpenAPI or `animetop fake-export-api`), without credentials."),
    Spec("COLLECT_API_USERNAME", "demo", str, "Export API user."),
    Spec("COLLECT_API_PASSWORD", "demo", str, "Export API password."),
    Spec("COLLECT_SINK", "database", _sink, "Where collected rows go: `database` (table collected_rows) or "
         "`actor:NAME` (one message per batch to that actor)."),
    # alert rules
    Spec("ALERT_OUTFLOW_SURGE_FACTOR", "3", _positive_float,
         "Outflow surge: the hour's outflow at least this many times the trailing 24 h hourly mean…"),
    Spec("ALERT_OUTFLOW_MIN", "20", _positive_int, "…and at least this outflow (also the hot-liquidity minimum)."),
    Spec("ALERT_LIQUIDITY_MIN", "1.5", _positive_float, "Hot liquidity: outflow/inflow at least this."),
    Spec("ALERT_PRICE_MOVE", "0.2", _positive_float,
         "Sold-price move: the hour's average sold price this far (fraction) from the trailing 7-day average…"),
    Spec("ALERT_PRICE_MIN_SAMPLES", "10", _positive_int, "…with at least this many sold prices on both sides."),
    # alert notifications (seed 003)
    Spec("NOTIFY_WEBHOOK_URLS", "", _webhook_list,
         "Comma-separated alert channels: https://… (generic JSON), slack+https://…, dingtalk+https://…"),
    Spec("NOTIFY_DEDUP_WINDOW", "5m", parse_duration, "The same alert state is not sent again within this."),
    Spec("NOTIFY_RETRIES", "3", _non_negative_int, "Retries of a channel that failed with a timeout or 5xx."),
    Spec("NOTIFY_RETRY_DELAY", "5s", parse_duration, "Delay between those retries."),
    Spec("NOTIFY_TIMEOUT", "10s", parse_duration, "Time limit of one webhook request."),
    Spec("DASHBOARD_URL", "http://127.0.0.1:8790",
         _url("http", "https", no_credentials="it is sent in every alert notification"),
         "Base URL of the dashboard, for links in notifications (so without credentials)."),
    Spec("METRICS_PORT", "9191", _positive_int,
         "Prometheus /metrics of the worker process type on 127.0.0.1 (the crawler's on the next port)."),
    # time
    Spec("CLOCK_SPEED", "1", _positive_float,
         "How many times faster than real time the app's clock runs (the demo's accelerated market)."),
    Spec("CLOCK_ANCHOR", "0", _non_negative_float, "Real Unix time the accelerated clock pivots on."),
    # reliability
    Spec("MAX_RETRIES", "3", _non_negative_int, "Retries of a failed message before it is dead-lettered."),
    Spec("RETRY_MIN_BACKOFF", "5s", parse_duration, "First retry delay; doubles on each retry."),
    Spec("RETRY_MAX_BACKOFF", "10m", parse_duration, "Longest retry delay."),
    Spec("ACTOR_TIME_LIMIT", "10m", parse_duration, "Default time limit of an actor run."),
    Spec("IDEMPOTENCY_TTL", "24h", parse_duration, "How long a processed message's key is remembered."),
    Spec("LOCK_TTL", "30s", parse_duration, "Default lock lease; extended while the holder runs."),
    Spec("LOCK_BUSY_RETRY_DELAY", "2s", parse_duration, "Delay before a message that met a held lock runs again."),
    Spec("LOCK_BUSY_MAX_WAITS", "100", _positive_int,
         "Times a message may meet a held lock before it is dead-lettered."),
    Spec("BROKER_HEARTBEAT_TIMEOUT", "10s", parse_duration,
         "Redis broker: silence after which a worker counts as dead and its messages are requeued."),
    Spec("BROKER_MAINTENANCE_CHANCE", "100000", _positive_int,
         "Redis broker: chance in 1,000,000 that a broker command runs queue maintenance."),
    Spec("DEAD_MESSAGE_TTL", "30d", parse_duration, "How long dead-lettered messages are kept."),
    Spec("MESSAGE_MAX_BYTES", "16777216", _positive_int, "Largest encoded message accepted or sent."),
    Spec("WORKER_SHUTDOWN_TIMEOUT", "60s", parse_duration,
         "How long a stopping worker waits for in-flight messages."),
    # process types (Procfile)
    Spec("WORKER_PROCESSES", "2", _positive_int, "Processes of the `worker` process type."),
    Spec("WORKER_THREADS", "8", _positive_int, "Threads per `worker` process."),
    Spec("CRAWLER_PROCESSES", "1", _positive_int, "Processes of the `crawler` process type."),
    Spec("CRAWLER_THREADS", "2", _positive_int, "Threads per `crawler` process (each drives one page at a time)."),
)

@dataclass(frozen=True)
class Settings:
    """The validated configuration; attribute names are the variables in lower case."""

    values: Mapping[str, Any] = field(repr=False)

    def __getattr__(self, name: str) -> Any:
        try:
            return self.values[name.upper()]
        except KeyError:
            raise AttributeError(name) from None

    @property
    def data_path(self) -> Path:
        return Path(self.values["DATA_DIR"]).resolve()

    @property
    def embedded_redis(self) -> bool:
        """True when no Redis was configured and the app runs its own."""
        return self.values["REDIS_URL"] is None

    @property
    def state_redis_url(self) -> str:
        """URL of the Redis database that holds application state."""
        return self.values["STATE_REDIS_URL"]

    @property
    def broker_url_resolved(self) -> str:
        return self.values["BROKER_URL_RESOLVED"]

    @property
    def database_url_resolved(self) -> str:
        return self.values["DATABASE_URL_RESOLVED"]


def redis_db_of(url: str) -> int:
    """The database number a Redis URL selects (``/N`` or ``?db=N``), 0 if none."""
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    if "db" in query:
        return int(query["db"][0])
    path = parts.path.strip("/")
    if parts.scheme != "unix" and path:
        return int(path)
    return 0


def with_redis_db(url: str, db: int) -> str:
    """The same Redis server with database ``db`` selected."""
    parts = urlsplit(url)
    if parts.scheme == "unix":
        query = "&".join(q for q in parts.query.split("&") if q and not q.startswith("db="))
        query = f"{query}&db={db}" if query else f"db={db}"
        return f"unix://{parts.path}?{query}"
    return parts._replace(path=f"/{db}").geturl()


def _names_a_db(url: str) -> bool:
    parts = urlsplit(url)
    return "db=" in parts.query or (parts.scheme != "unix" and bool(parts.path.strip("/")))


def _redis_server_of(url: str) -> tuple:
    parts = urlsplit(url)
    if parts.scheme == "unix":
        return ("unix", parts.path)
    return (parts.hostname, parts.port or 6379)


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Parse and validate every setting; raise ``SettingsError`` naming the first bad one."""
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for spec in SPECS:
        raw = env.get(spec.name)
        if raw is None or raw == "":
            values[spec.name] = None if spec.default is None else spec.parse(spec.default)
            continue
        try:
            values[spec.name] = spec.parse(raw)
        except ValueError as e:
            raise SettingsError(spec.name, str(e)) from None

    _check_relations(values)
    _resolve_urls(values)
    return Settings(values)


def _check_relations(v: dict[str, Any]) -> None:
    if v["SCHEDULER_MIN_INTERVAL"] > v["SCHEDULER_MAX_INTERVAL"]:
        raise SettingsError("SCHEDULER_MIN_INTERVAL", "must not be longer than SCHEDULER_MAX_INTERVAL")
    if not v["SCHEDULER_MIN_INTERVAL"] <= v["SCHEDULER_BASE_INTERVAL"] <= v["SCHEDULER_MAX_INTERVAL"]:
        raise SettingsError(
            "SCHEDULER_BASE_INTERVAL", "must lie between SCHEDULER_MIN_INTERVAL and SCHEDULER_MAX_INTERVAL")
    if v["WEIGHT_MIN"] > v["WEIGHT_MAX"]:
        raise SettingsError("WEIGHT_MIN", "must not be above WEIGHT_MAX")
    if v["POOL_THRESHOLD"] > v["POOL_SIZE"]:
        raise SettingsError("POOL_THRESHOLD", "must not be above POOL_SIZE")
    if v["RETRY_MIN_BACKOFF"] > v["RETRY_MAX_BACKOFF"]:
        raise SettingsError("RETRY_MIN_BACKOFF", "must not be longer than RETRY_MAX_BACKOFF")
    if v["BROKER_MAINTENANCE_CHANCE"] > 1_000_000:
        raise SettingsError("BROKER_MAINTENANCE_CHANCE", "is a chance in 1,000,000; must be at most 1000000")
    for name in ("REDIS_URL", "BROKER_URL"):
        url = v[name]
        if url and urlsplit(url).scheme in REDIS_SCHEMES:
            try:
                redis_db_of(url)
            except ValueError:
                raise SettingsError(name, "the database number after the host must be a whole number") from None
    db_url = v["DATABASE_URL"]
    if db_url and urlsplit(db_url).scheme == "mysql" and not urlsplit(db_url).path.strip("/"):
        raise SettingsError("DATABASE_URL", "a mysql:// URL must name the database, e.g. mysql://root@127.0.0.1:3306/animetop")


def _resolve_urls(v: dict[str, Any]) -> None:
    data_dir = Path(v["DATA_DIR"]).resolve()
    redis_url = v["REDIS_URL"]
    if redis_url is None:
        # The embedded server listens only on a unix socket: no port to collide with.
        redis_url = f"unix://{data_dir / 'redis.sock'}"
        state_url = with_redis_db(redis_url, 1)
    else:
        state_url = redis_url if _names_a_db(redis_url) else with_redis_db(redis_url, 1)
    v["STATE_REDIS_URL"] = state_url

    broker_url = v["BROKER_URL"] or with_redis_db(redis_url, 0)
    if urlsplit(broker_url).scheme in REDIS_SCHEMES:
        same_server = _redis_server_of(broker_url) == _redis_server_of(state_url)
        if same_server and redis_db_of(broker_url) == redis_db_of(state_url):
            raise SettingsError(
                "BROKER_URL",
                "uses the same Redis database as REDIS_URL; the broker's maintenance scans its keys, "
                "so give them different database numbers")
    v["BROKER_URL_RESOLVED"] = broker_url
    v["DATABASE_URL_RESOLVED"] = v["DATABASE_URL"] or f"sqlite:///{data_dir / 'animetop.sqlite3'}"


_lock = threading.Lock()
_settings: Settings | None = None


def get_settings() -> Settings:
    """The process's settings, loaded from the environment on first use."""
    global _settings
    with _lock:
        if _settings is None:
            _settings = load_settings()
        return _settings


def settings_or_exit() -> Settings:
    """The settings, or exit with one line naming the bad variable."""
    try:
        return get_settings()
    except SettingsError as e:
        print(f"animetop: bad setting {e}", file=sys.stderr)
        raise SystemExit(2) from None


def use_settings(settings: Settings | None) -> None:
    """Replace the process's settings (tests and the CLI's overrides); None forgets them."""
    global _settings
    with _lock:
        _settings = settings


#: Query parameters whose values are secrets: webhook tokens (DingTalk's access_token), API keys, signatures.
_SECRET_QUERY_KEY = re.compile(r"token|secret|passw|pwd|signature|credential|(api|access|private)_?key"
                               r"|^(key|sig|sign|auth|authorization|session|sessionid|sid)$", re.I)
#: A path segment that looks like a token (Slack's and Discord's webhook URLs carry theirs in the path):
#: 16 or more letters, digits, - or _, with both letters and digits.
_TOKEN_SEGMENT = re.compile(r"^(?=[A-Za-z0-9_-]*[0-9])(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{16,}$")


def redact_url(url: str) -> str:
    """The URL with its secrets replaced by ``***``, for logs, status output and stored channel names:

    * the password (``user:***@host``), or a user name given alone (``***@host``, a common way to pass a token),
      also of a URL cut short after the password began (``user:***``);
    * the values of query parameters named like a secret (``access_token``, ``key``, ``sign``…);
    * for http(s) URLs, path segments that look like tokens (``/services/T0/B0/***`` of a Slack webhook).
    """
    try:
        parts = urlsplit(url)
    except ValueError:  # not even a URL (e.g. a broken IPv6 host): still never show what precedes an @
        return re.sub(r"//[^/?#]*@", "//***@", url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user, colon, _password = userinfo.partition(":")
        netloc = f"{user}:***@{host}" if colon else f"***@{host}"
    elif ":" in netloc and not netloc.endswith("]") and not netloc.rpartition(":")[2].isdigit():
        netloc = netloc.partition(":")[0] + ":***"  # "user:passw…" cut short (a truncated message): no host yet
    query = "&".join(_redact_query_item(item) for item in parts.query.split("&")) if parts.query else ""
    path = parts.path
    if parts.scheme.split("+")[-1] in ("http", "https"):
        path = "/".join("***" if _TOKEN_SEGMENT.match(segment) else segment for segment in path.split("/"))
    if (netloc, query, path) == (parts.netloc, parts.query, parts.path):
        return url
    rebuilt = f"{parts.scheme}:" if parts.scheme else ""
    if parts.netloc or url[len(rebuilt):].startswith("//"):
        rebuilt += f"//{netloc}"
    return rebuilt + path + (f"?{query}" if query else "") + (f"#{parts.fragment}" if parts.fragment else "")


_URL_IN_TEXT = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")


def redact_text(text: str) -> str:
    """Free text (a log line, an error message, a traceback) with every URL in it passed through
    ``redact_url``: what a library quotes in an exception must not carry our credentials to a log."""
    if "://" not in text:
        return text
    return _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)), text)


def _redact_query_item(item: str) -> str:
    name, equals, value = item.partition("=")
    return f"{name}=***" if equals and value and _SECRET_QUERY_KEY.search(name) else item
