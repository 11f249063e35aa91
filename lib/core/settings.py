"""Every setting of the application, read from the environment once.

Each setting is declared exactly once, as a typed field of ``Settings`` with its default (raw text), parser and
meaning; ``SPECS`` lists them in that order for docs/reference/configuration.md and ``animetop settings``.
Nothing else in the code base reads ``os.environ`` for configuration: everything asks ``get_settings()``.
Parsers live in ``lib.core.parsers``, Redis URL helpers in ``lib.core.redis_urls``, redaction in
``lib.core.redaction``.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from lib.core import parsers, redis_urls


class SettingsError(ValueError):
    """A setting has a value the application cannot run with."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"{name}: {problem}")
        self.name = name
        self.problem = problem


@dataclass(frozen=True)
class Spec:
    """One environment variable: its name, default (raw text), parser and meaning."""

    name: str
    default: str | None
    parse: Callable[[str], Any]
    doc: str


def setting(default: str | None, parse: Callable[[str], Any], doc: str) -> Any:
    """Declare a field of ``Settings`` as an environment variable (its name in upper case): the default as the
    text a user would write (None: unset), the parser that turns text into the field's type, and the meaning."""
    return dataclasses.field(metadata={"spec": (default, parse, doc)})


def derived(doc: str) -> Any:
    """A field of ``Settings`` computed from the others when the settings are loaded (not a variable)."""
    return dataclasses.field(metadata={"derived": doc})


#: Why BROKER_URL cannot name a Redis Cluster (the message a user sees).
BROKER_NOT_CLUSTER = ("Dramatiq's Redis broker does not support Redis Cluster (its scripts touch keys of "
                      "several queues at once); use RabbitMQ (amqp://…) or a single Redis server (redis://…)")
_NOT_A_CLUSTER = {scheme: BROKER_NOT_CLUSTER for scheme in redis_urls.CLUSTER_SCHEMES}


@dataclass(frozen=True)
class Settings:
    """The validated configuration: a field per environment variable, in lower case, with its type."""

    # where things live
    data_dir: str = setting("./var", parsers.path,
            "Directory of the embedded Redis and SQLite data.")
    redis_url: str | None = setting(None, parsers.url(*redis_urls.REDIS_SCHEMES, *redis_urls.CLUSTER_SCHEMES),
            "Redis for application state (schedule, item states, locks, idempotency). Unset: an embedded "
            "redis-server under DATA_DIR. Database 1 unless the URL names one. "
            "`redis+cluster://host:port[,host:port…]` puts it on a Redis Cluster (then BROKER_URL must be set).")
    broker_url: str | None = setting(None, parsers.url(*redis_urls.REDIS_SCHEMES, "amqp", "amqps", "stub",
                                                       refused=_NOT_A_CLUSTER),
            "Message broker: redis://… (Dramatiq RedisBroker; not a Redis Cluster) or amqp://… (RabbitmqBroker); "
            "stub:// is Dramatiq's in-memory StubBroker, for tests. Unset: database 0 of the Redis server of "
            "REDIS_URL.")
    database_url: str | None = setting(None, parsers.url("sqlite", "mysql"),
            "sqlite:///path or mysql://user:pass@host:port/db. Unset: SQLite at DATA_DIR/animetop.sqlite3 (WAL).")
    log_level: str = setting("INFO", parsers.log_level,
            "Log level of every process.")
    # scheduler (docs/concepts/scheduling.md)
    scheduler_base_interval: float = setting("2h", parsers.parse_duration,
            "Crawl interval of an IP of weight 1.0.")
    scheduler_min_interval: float = setting("1h", parsers.parse_duration,
            "Shortest crawl interval (hot IPs).")
    scheduler_max_interval: float = setting("2h", parsers.parse_duration,
            "Longest crawl interval (cold IPs).")
    scheduler_pages_on_sale: int = setting("5", parsers.positive_int,
            "The most on-sale search pages a crawl reads.")
    scheduler_pages_sold: int = setting("5", parsers.positive_int,
            "The most sold search pages a crawl reads.")
    scheduler_sold_deep_every: int = setting("1", parsers.positive_int,
            "Where an IP's sold search outruns SCHEDULER_PAGES_SOLD pages, read it deep every this many crawls (as "
            "many pages as the cap of that many crawls, less the newest page each of the others reads) and only its "
            "newest page in between: a deep read sees the older listings' sales the cap never reaches, for the same "
            "requests, and the latest sales wait for it (docs/concepts/crawling.md, Pages that follow change); "
            "1: every crawl reads to its cap.")
    scheduler_pages_sold_max: int = setting("20", parsers.positive_int,
            "With requests to spare under the request budget, the IPs whose sold search outruns "
            "SCHEDULER_PAGES_SOLD pages read it deeper, all to one depth of at most this many pages, as far as the "
            "spare requests pay for (docs/concepts/scheduling.md, Under the request budget); at or below "
            "SCHEDULER_PAGES_SOLD, or with SCHEDULER_SOLD_DEEP_EVERY above 1: never deeper.")
    scheduler_relist_pages: int = setting("30", parsers.non_negative_int,
            "The most on-sale pages a crawl reads back to the earlier listings that the IP's undecided new listings "
            "may relist (docs/concepts/crawling.md, Pages that follow change), once every SCHEDULER_RELIST_EVERY, "
            "when the IP's flow lets that many pages reach at least one of them; at or below "
            "SCHEDULER_PAGES_ON_SALE: never (a shop's relist no crawl reads back past counts as new goods).")
    scheduler_relist_every: float = setting("24h", parsers.parse_duration,
            "How often an IP with undecided new listings has its on-sale search read back to what they may relist "
            "(SCHEDULER_RELIST_PAGES).")
    scheduler_relist_checks: int = setting("20", parsers.non_negative_int,
            "The most listings a crawl checks on their own pages after its searches (docs/concepts/crawling.md, Item "
            "checks): the earlier listings that the IP's longest undecided new listings may relist, each check one "
            "request; planned only while the request budget does not bind. Where a result leaves more undecided "
            "listings than this, a sample of this many is drawn and checked first, and the others only while at "
            "most 24 crawls' checks of them wait. 0: none (undecided listings wait for the reads back, "
            "SCHEDULER_RELIST_PAGES).")
    scheduler_page_plan: bool = setting("true", parsers.boolean,
            "Read each search of a crawl only as deep as what changed since the IP's last crawl needs, within "
            "SCHEDULER_PAGES_ON_SALE and SCHEDULER_PAGES_SOLD (docs/concepts/crawling.md, Pages that follow "
            "change); false: every crawl reads both searches to their end or their caps.")
    scheduler_budget_share: float = setting("0.8", parsers.share,
            "The share of the addresses' request budgets (CRAWL_RATE_LIMIT each, less after a 429) the schedule "
            "plans to spend: where the IPs' own intervals would spend more, the quietest IPs' intervals are "
            "lengthened up to SCHEDULER_MAX_INTERVAL (docs/concepts/scheduling.md, Under the request budget); the "
            "rest is left for retries and bursts.")
    scheduler_batch_size: int = setting("50", parsers.positive_int,
            "Due IPs pushed per batch.")
    scheduler_backpressure_threshold: int = setting("25", parsers.positive_int,
            "Crawl-queue depth above which the scheduler stops pushing.")
    scheduler_startup_spread: float = setting("10m", parsers.parse_duration,
            "Window over which overdue IPs are spread when the schedule is rebuilt from the database.")
    janitor_interval: float = setting("5m", parsers.parse_duration,
            "How often stale in-flight markers are swept.")
    janitor_timeout: float = setting("10m", parsers.parse_duration,
            "Age after which an in-flight marker counts as stuck.")
    analyzer_item_ttl_available: float = setting("24h", parsers.parse_duration,
            "Lifetime of an on-sale item's state.")
    analyzer_item_ttl_sold: float = setting("48h", parsers.parse_duration,
            "Lifetime of a sold item's state.")
    relist_within: float = setting("8d", parsers.parse_duration,
            "How long after a seller's listing another of theirs with the same title counts as its relist, not as "
            "new goods (docs/concepts/measures.md, definition 2). At most RETENTION_DETAIL: the earlier listing "
            "must still be stored.")
    flow_estimates: bool = setting("true", parsers.boolean,
            "Estimate an IP's inflow and outflow, with a 95 % interval, where its pages cannot reach back "
            "(docs/concepts/measures.md, Estimates); false: the flows are the counts of what the pages showed. "
            "An estimated inflow counts the relists it cannot recognise as new listings (docs/benchmarks.md, "
            "Accuracy).")
    weight_min: float = setting("0.25", parsers.positive_float,
            "Lowest weight an IP can drift to (longest interval).")
    weight_max: float = setting("4.0", parsers.positive_float,
            "Highest weight an IP can reach (shortest interval).")
    display_tz: str = setting("Asia/Tokyo", parsers.timezone,
            "Time zone hours are shown in (they are stored in UTC).")
    cache_ttl: float = setting("10m", parsers.parse_duration,
            "How long a computed leaderboard or IP detail is served, and never past the end of its hour: the most "
            "a leaderboard lags the results (refresh_leaderboards recomputes the dashboard's windows at half of it).")
    leaderboard_precompute: tuple[int, ...] = setting("1d,7d,30d", parsers.hour_windows,
            "Leaderboard windows refresh_leaderboards keeps computed, so viewers find them warm (each at least every "
            "CACHE_TTL/2), and keeps as one precomputed row per IP beside the standard 1, 7 and 30 days (Market "
            "data); add 90d for the longest.")
    # storage (docs/operating/storage.md)
    retention_window: float = setting("90d", parsers.parse_duration,
            "Longest window the stored facts answer exactly: pruning keeps all a window up to this long reads "
            "(with its previous window and 7-day baseline: 2 x this + 8 days); longer windows are refused.")
    retention_detail: float = setting("10d", parsers.parse_duration,
            "How long the per-listing facts (sightings, events, snapshots) are kept: windows reaching further back "
            "read the pruned listings from daily summaries (exact counts; prices and times to sell within stated "
            "bounds), and a crawl result older than this is skipped.")
    retention_daily: float = setting("730d", parsers.parse_duration,
            "How long the daily rows (ip_stats_daily) are kept: the longest per-day series answered.")
    retention_prune: bool = setting("true", parsers.boolean,
            "Whether the hourly prune_storage actor prunes (false: keep everything; `animetop db prune` still works).")
    # segments (docs/concepts/measures.md "Segments")
    segments_taxonomy: str | None = setting(None, parsers.path,
            "The goods types listing titles are classified by (a TOML file like lib/segments/goods_types.toml); "
            "unset: that packaged file. After changing it, restart the workers and run `animetop segments reapply`.")
    # crawler (docs/concepts/crawling.md)
    mercari_base_url: str = setting("https://jp.mercari.com", parsers.url("http", "https",
                                    no_credentials="pages and logs show it; an authenticated proxy goes in PROXY_URLS"),
            "Site the crawler searches (the simulator's URL in tests and the demo).")
    mercari_api_pattern: str = setting(r"/v2/entities:search", parsers.regex,
            "Regular expression of the search API's URL, whose responses the crawler captures.")
    chromium_path: str | None = setting(None, str,
            "Chromium binary; unset: found in the usual system paths.")
    chromium_no_sandbox: bool = setting("false", parsers.boolean,
            "Turn Chromium's OS-level sandbox off (`--no-sandbox`). Required as root (containers); see "
            "docs/reliability/security.md.")
    proxy_urls: tuple[str, ...] = setting("", parsers.proxy_list,
            "Comma-separated HTTP(S)/SOCKS5 proxies the crawler rotates through.")
    proxy_switch_after: int = setting("10", parsers.positive_int,
            "Consecutive timeout/blocked/network failures before switching.")
    proxy_cooldown: float = setting("30m", parsers.parse_duration,
            "Least time between two proxy switches.")
    crawl_page_timeout: float = setting("30s", parsers.parse_duration,
            "Time limit of one search page: every wait on it (each call to the browser) ends by then.")
    crawl_max_pages: int = setting("2", parsers.positive_int,
            "Browser pages open at once per crawler process.")
    crawl_browser_max_crawls: int = setting("50", parsers.positive_int,
            "Crawls before the browser is restarted (draining).")
    crawl_block_resources: bool = setting("true", parsers.boolean,
            "Drop images, fonts, media and analytics requests.")
    crawl_rate_limit: int = setting("48", parsers.non_negative_int,
            "The request budget: page loads per minute to the site per address (each proxy of PROXY_URLS, or "
            "the crawlers' own address), fleet-wide: however many crawler processes and machines run, at most "
            "this many begin in any minute, shared through Redis. A 429 halves an address's budget, which then "
            "climbs back by one a minute (docs/concepts/crawling.md). 48: about 60 a minute from one address "
            "ran clean and about 76 drew a 429 in a public probe. 0: no limit and no cut (a local simulator).")
    crawl_direct_address: str = setting("direct", parsers.address_name,
            "The name of the address this machine's crawlers load pages from without a proxy: crawlers that give "
            "the same name share one request budget. The default, one name for all, suits machines behind one "
            "address (NAT); give each machine with an address of its own its own name.")
    seller_hash_secret: str | None = setting(None, parsers.secret_token,
            "Key of the keyed hash the crawler keeps of each listing's seller id, to recognise a seller's relists "
            "(docs/concepts/crawling.md): the raw id is never stored. The same on every crawler; changing it "
            "breaks the link between listings hashed before and after. Unset: a random key made once and kept "
            "in the state store, shared by every crawler of the deployment.")
    # title/content pools (docs/operating/pools.md)
    pool_size: int = setting("5000", parsers.positive_int,
            "Rows a title/content pool is filled up to.")
    pool_threshold: int = setting("1000", parsers.positive_int,
            "A pool shorter than this is refilled.")
    pool_mark_used_interval: float = setting("500ms", parsers.parse_duration,
            "How often a consumer sends the ids it handed out to be marked used (one batched message).")
    # collection from an export API (docs/operating/collection.md)
    collect_api_url: str = setting("http://127.0.0.1:8765", parsers.url("http", "https",
                                   no_credentials="set COLLECT_API_USERNAME and COLLECT_API_PASSWORD instead"),
            "Base URL of the export API (Octoparse OpenAPI or `animetop fake-export-api`), without credentials.")
    collect_api_username: str = setting("demo", str,
            "Export API user.")
    collect_api_password: str = setting("demo", str,
            "Export API password.")
    collect_sink: str = setting("database", parsers.sink,
            "Where collected rows go: `database` (table collected_rows) or "
            "`actor:NAME` (one message per batch to that actor).")
    # alert rules
    alert_outflow_surge_factor: float = setting("3", parsers.positive_float,
            "Outflow surge: a settled hour's outflow at least this many times the trailing 24 h hourly median "
            "(at least 1) and above median + 3 scaled MADs…")
    alert_outflow_min: int = setting("20", parsers.positive_int,
            "…and at least this outflow (also the hot-liquidity minimum).")
    alert_liquidity_min: float = setting("1.5", parsers.positive_float,
            "Hot liquidity: outflow/inflow at least this.")
    alert_price_move: float = setting("0.2", parsers.positive_float,
            "Sold-price move: a settled hour's median sold price this far (fraction) from the trailing 7-day "
            "median…")
    alert_warmup_hours: int = setting("12", parsers.positive_int,
            "No alert for an IP's hour until this many full hours of tracking precede it (the warm-up).")
    alert_price_min_samples: int = setting("10", parsers.positive_int,
            "…with at least this many sold prices on both sides.")
    # alert notifications (docs/operating/alerts.md)
    notify_webhook_urls: tuple[str, ...] = setting("", parsers.webhook_list,
            "Comma-separated alert channels: https://… (generic JSON), slack+https://…, dingtalk+https://…")
    notify_dedup_window: float = setting("5m", parsers.parse_duration,
            "The same alert state is not sent again within this.")
    notify_retries: int = setting("3", parsers.non_negative_int,
            "Retries of a channel that failed with a timeout or 5xx.")
    notify_retry_delay: float = setting("5s", parsers.parse_duration,
            "Delay between those retries.")
    notify_timeout: float = setting("10s", parsers.parse_duration,
            "Time limit of one webhook request.")
    dashboard_url: str = setting("http://127.0.0.1:8790", parsers.url("http", "https",
                                 no_credentials="it is sent in every alert notification"),
            "Base URL of the dashboard, for links in notifications (so without credentials).")
    dashboard_token: str | None = setting(None, parsers.secret_token,
            "Operator token of the dashboard: with it, requeue and purge of dead letters, and changes to the IPs' "
            "character lists, are allowed to whoever presents it (at least 16 characters). Unset: the dashboard is "
            "read-only.")
    metrics_port: int = setting("9191", parsers.positive_int,
            "Prometheus /metrics of the worker process type on 127.0.0.1 (the crawler's on the next port).")
    metrics_dir: str | None = setting(None, parsers.path,
            "Directory of the process types' Prometheus files (a subdirectory per process type and /metrics "
            "port, emptied when its runner starts). Unset: DATA_DIR/metrics.")
    # time
    clock_speed: float = setting("1", parsers.positive_float,
            "How many times faster than real time the app's clock runs (the demo's accelerated market).")
    clock_anchor: float = setting("0", parsers.non_negative_float,
            "Real Unix time the accelerated clock pivots on.")
    # reliability
    max_retries: int = setting("3", parsers.non_negative_int,
            "Retries of a failed message before it is dead-lettered.")
    retry_min_backoff: float = setting("5s", parsers.parse_duration,
            "First retry delay; doubles on each retry.")
    retry_max_backoff: float = setting("10m", parsers.parse_duration,
            "Longest retry delay.")
    actor_time_limit: float = setting("10m", parsers.parse_duration,
            "Default time limit of an actor run.")
    idempotency_ttl: float = setting("24h", parsers.parse_duration,
            "How long a processed message's key is remembered.")
    state_outage_tolerance: float = setting("60s", parsers.parse_duration,
            "How long the application-state Redis may be unreachable (a failover, a restart) before messages "
            "that meet it spend their retries: shorter outages are retried with backoff, no dead letter, no ERROR.")
    lock_ttl: float = setting("30s", parsers.parse_duration,
            "Default lock lease; extended while the holder runs.")
    lock_busy_retry_delay: float = setting("2s", parsers.parse_duration,
            "Delay before a message that met a held lock runs again.")
    lock_busy_max_waits: int = setting("100", parsers.positive_int,
            "Times a message may meet a held lock before it is dead-lettered.")
    broker_heartbeat_timeout: float = setting("10s", parsers.parse_duration,
            "Redis broker: silence after which a worker counts as dead and its messages are requeued.")
    broker_maintenance_chance: int = setting("100000", parsers.positive_int,
            "Redis broker: chance in 1,000,000 that a broker command runs queue maintenance.")
    dead_message_ttl: float = setting("30d", parsers.parse_duration,
            "How long dead-lettered messages are kept.")
    message_max_bytes: int = setting("16777216", parsers.positive_int,
            "Largest encoded message accepted or sent.")
    worker_shutdown_timeout: float = setting("60s", parsers.parse_duration,
            "How long a stopping worker waits for in-flight messages.")
    # process types (Procfile)
    worker_processes: int = setting("2", parsers.positive_int,
            "Processes of the `worker` process type.")
    worker_threads: int = setting("8", parsers.positive_int,
            "Threads per `worker` process.")
    crawler_processes: int = setting("1", parsers.positive_int,
            "Processes of the `crawler` process type.")
    crawler_threads: int = setting("2", parsers.positive_int,
            "Threads per `crawler` process (each drives one page at a time).")

    # resolved when loaded
    state_redis_url: str = derived("URL of the Redis database that holds application state.")
    broker_url_resolved: str = derived("BROKER_URL, or the broker's database of the Redis of REDIS_URL.")
    database_url_resolved: str = derived("DATABASE_URL, or the SQLite file under DATA_DIR.")

    @property
    def data_path(self) -> Path:
        return Path(self.data_dir).resolve()

    @property
    def embedded_redis(self) -> bool:
        """True when no Redis was configured and the app runs its own."""
        return self.redis_url is None

    @property
    def redis_cluster(self) -> bool:
        """True when application state lives on a Redis Cluster (``redis+cluster://``)."""
        return redis_urls.is_cluster_url(self.state_redis_url)


#: Every variable, in declaration order (docs/reference/configuration.md and ``animetop settings`` follow it).
SPECS: tuple[Spec, ...] = tuple(
    Spec(f.name.upper(), *f.metadata["spec"]) for f in dataclasses.fields(Settings) if "spec" in f.metadata)


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
    return Settings(**{name.lower(): value for name, value in values.items()})


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
    if v["REDIS_URL"] and redis_urls.is_cluster_url(v["REDIS_URL"]):
        try:
            redis_urls.parse_cluster_url(v["REDIS_URL"])
        except ValueError as e:
            raise SettingsError("REDIS_URL", str(e)) from None
        if not v["BROKER_URL"]:
            raise SettingsError("BROKER_URL", "must be set when REDIS_URL is a Redis Cluster: " + BROKER_NOT_CLUSTER)
    for name in ("REDIS_URL", "BROKER_URL"):
        url = v[name]
        if url and urlsplit(url).scheme in redis_urls.REDIS_SCHEMES:
            try:
                redis_urls.redis_db_of(url)
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
        state_url = redis_urls.with_redis_db(redis_url, 1)
    elif redis_urls.is_cluster_url(redis_url):
        state_url = redis_url  # a cluster has database 0 only; the broker is elsewhere (checked above)
    else:
        state_url = redis_url if redis_urls.names_a_db(redis_url) else redis_urls.with_redis_db(redis_url, 1)
    v["STATE_REDIS_URL"] = state_url

    broker_url = v["BROKER_URL"] or redis_urls.with_redis_db(redis_url, 0)
    if urlsplit(broker_url).scheme in redis_urls.REDIS_SCHEMES and not redis_urls.is_cluster_url(state_url):
        same_server = redis_urls.redis_server_of(broker_url) == redis_urls.redis_server_of(state_url)
        if same_server and redis_urls.redis_db_of(broker_url) == redis_urls.redis_db_of(state_url):
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
