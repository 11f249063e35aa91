"""The shapes of ``/api/v1`` (they make its OpenAPI document, and responses are validated against it)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from lib.forecast.breakouts import MARGIN, MIN_SAMPLE
from lib.forecast.read import CURRENT_DAYS
from lib.segments.character_rules import MAX_ALIASES, MAX_CHARACTERS, NAME_MAX_LENGTH, NO_CONTROL_CHARACTERS


class Problem(BaseModel):
    detail: str


class Measure(BaseModel):
    key: str
    label: str
    unit: str = Field(description="how values are shown: '', '¥', '/h', 'hours', '%', 'score'")


class Meta(BaseModel):
    measures: list[Measure] = Field(description="what the leaderboard can be sorted by")
    windows: list[int] = Field(description="window lengths offered, in hours")
    max_hours: int = Field(description="the longest window the API answers, in hours (RETENTION_WINDOW)")
    max_days: int = Field(description="the longest per-day series the API answers, in days (RETENTION_DAILY)")
    max_segment_hours: int = Field(description="the longest window segments are answered for, in hours "
                                               "(RETENTION_WINDOW, as max_hours)")
    timezone: str = Field(description="DISPLAY_TZ: the time zone pages show times in")
    operator_enabled: bool = Field(description="whether DASHBOARD_TOKEN is set (requeue and purge possible)")
    operator: bool = Field(description="whether this request carries a valid operator session")
    csrf_token: str | None = None


class LeaderboardRow(BaseModel):
    """One IP's measures over the window; a measure with too few observations is null (insufficient), never 0."""

    model_config = ConfigDict(extra="allow")

    rank: int
    ip_id: int
    keyword: str
    name: str
    inflow: float | None = Field(None, description="new goods listed in the window: a count, or an estimate where "
                                                  "inflow_interval is given")
    outflow: float | None = Field(None, description="listings sold in the window: a count, or an estimate where "
                                                   "outflow_interval is given")
    inflow_interval: list[float | None] | None = Field(None, description="[low, high], the 95 % interval of an "
                                                                         "estimated inflow: the IP's pages could not "
                                                                         "reach back, or its shops' undecided "
                                                                         "relists are estimated from a sample "
                                                                         "(docs/concepts/measures.md, Estimates); "
                                                                         "null: counted")
    outflow_interval: list[float | None] | None = Field(None, description="[low, high], the 95 % interval of an "
                                                                          "estimated outflow; null: counted")
    liquidity: float | None = None
    sparkline: list[int] = Field(description="outflow per hour (windows up to 48 h) or per day, oldest first")


class Leaderboard(BaseModel):
    by: str
    hours: int
    query: str = Field(description="the name filter applied ('' for none)")
    total: int = Field(description="IPs ranked before the filter and the limit")
    left_out: int = Field(description="IPs with data in the window that this ranking leaves out: their measure is "
                                      "insufficient (never ranked as 0)")
    left_out_why: str = Field(description="what the ranking's measure needs of an IP")
    rows: list[LeaderboardRow]


class HourPoint(BaseModel):
    model_config = ConfigDict(extra="allow")

    hour: str = Field(description="start of the hour, ISO 8601 in DISPLAY_TZ")
    inflow: int
    outflow: int
    liquidity: float | None = None
    samples: int = Field(description="sales with a real price in the hour")


class AlertOut(BaseModel):
    model_config = ConfigDict(extra="allow")

    rule: str
    hour: str
    message: str
    value: float
    threshold: float


class Sale(BaseModel):
    source_id: str
    title: str
    price: int | None = Field(description="yen; null: the listing had no real price")
    sold_at: float | None = Field(description="Unix seconds")
    item_url: str


class SearchPoint(BaseModel):
    crawled_at: float
    on_sale: int | None = Field(description="the on-sale search's total as the site reported it")
    sold: int | None = Field(description="the sold search's total as the site reported it")
    on_sale_read: int | None = Field(None, description="the IP's listings the on-sale pages read")
    sold_read: int | None = Field(None, description="the IP's listings the sold pages read")
    on_sale_missed: int | None = Field(None, description="listings the on-sale pages held whose titles name neither "
                                       "the IP's keyword nor an alias (not counted); null: not told apart")
    sold_missed: int | None = Field(None, description="the same, of the sold pages")


class IpDetail(BaseModel):
    model_config = ConfigDict(extra="allow")

    ip_id: int
    keyword: str
    name: str
    active: bool
    weight: float
    hours: int
    timezone: str
    last_crawled_at: str | None = Field(description="the IP's newest crawl (ISO 8601 in `timezone`; null: none yet): "
                                                    "what was listed or sold since is in no measure until the next")
    measures: dict[str, Any] = Field(description="the window's measures, each {value, n} (time_to_sell_hours: "
                                                "{p25, median, p75} of those, and listings)")
    series: list[HourPoint]
    alerts: list[AlertOut]
    latest_sales: list[Sale]
    search_totals: list[SearchPoint]


class DayPoint(BaseModel):
    day: str = Field(description="the UTC day, YYYY-MM-DD")
    partial: bool = Field(description="today: the day so far")
    hours: int = Field(description="tracked hours of the day")
    inflow: int
    outflow: int
    samples: int = Field(description="sales with a real price in the day")
    median_price: float | None = None
    p25_price: float | None = None
    p75_price: float | None = None
    avg_price: float | None = None
    min_price: float | None = None
    max_price: float | None = None


class IpDays(BaseModel):
    ip_id: int
    days: int
    first_day: str = Field(description="the first UTC day of the range, YYYY-MM-DD")
    last_day: str = Field(description="today (UTC), YYYY-MM-DD")
    series: list[DayPoint] = Field(description="the days with a row (tracked), oldest first")


class ForecastDay(BaseModel):
    day: str = Field(description="the UTC day forecast, YYYY-MM-DD")
    mean: float = Field(description="the point forecast: new listings or sales in the day, or the sold-price median")
    interval_80: list[float] = Field(description="[low, high]: the 80 % interval (flows never below 0)")
    interval_95: list[float] = Field(description="[low, high]: the 95 % interval")


class MeasureForecast(BaseModel):
    measure: Literal["inflow", "outflow", "median_price"]
    origin: str | None = Field(description="the last day of history the forecast starts after, YYYY-MM-DD (null: "
                                           "no day counts yet)")
    history_days: int = Field(description="the days of history it was (or would be) fitted on")
    model: str | None = Field(description="the model fitted (null: no forecast)")
    fitted_at: float | None = Field(description="when it was fitted, Unix seconds")
    days: list[ForecastDay] = Field(description="the 7 days after origin; empty where the history is too short")
    why: str | None = Field(description="while days is empty: what the forecast needs and what the history has")


class IpForecast(BaseModel):
    ip_id: int
    keyword: str
    name: str
    forecasts: list[MeasureForecast] = Field(description="inflow, outflow and the sold-price median "
                                                         "(docs: concepts/forecasts)")


class NextDays(BaseModel):
    days: int = Field(description="how many days ahead (7)")
    outflow: float | None = Field(description="sales expected over those days: the sum of each day's point "
                                               "forecast (null: no forecast)")
    inflow: float | None = Field(description="new listings expected likewise")


class SegmentForecast(BaseModel):
    key: str = Field(description="the goods type's id or the character's name")
    label: str = Field(description="the goods type's display name (a character: its name)")
    next_days: NextDays
    forecasts: list[MeasureForecast] = Field(description="inflow, outflow and the sold-price median of the segment's "
                                                         "listings")


class IpSegmentForecasts(BaseModel):
    ip_id: int
    keyword: str
    name: str
    by: Literal["goods", "character"]
    segments: list[SegmentForecast] = Field(description="each segment with a daily row in the history, the most "
                                                        "sales expected first (docs: concepts/forecasts)")


class BoardNextDaysRow(BaseModel):
    key: str = Field(description="the goods type's id or the character's name")
    label: str
    ips: int = Field(description="the IPs whose forecast of this segment's sales is added up")
    outflow: float | None = Field(description="sales expected over the next days, added up over those IPs")
    inflow: float | None = Field(description="new listings expected likewise")


class BoardNextDays(BaseModel):
    by: Literal["goods", "character"]
    days: int = Field(description="how many days ahead (7)")
    stale_ips: int = Field(description=f"IPs left out: their forecasts are older than the last {CURRENT_DAYS} closed "
                                       "days (paused or no longer tracked)")
    segments: list[BoardNextDaysRow] = Field(description="the most sales expected first (docs: concepts/forecasts, "
                                                         "Segments)")


class SegmentKey(BaseModel):
    kind: Literal["goods", "character"]
    key: str = Field(description="the goods type's id or the character's name")


class RisingRow(BaseModel):
    rank: int
    ip_id: int
    keyword: str
    name: str
    segment: SegmentKey | None = Field(description="the IP's goods type or character ranked (null: the IP itself)")
    day: str = Field(description="the last closed UTC day, YYYY-MM-DD")
    value: float = Field(description="the day's flow, scaled to the whole day")
    expected: float = Field(description="the forecast made for the day the day before")
    interval_95: list[float] = Field(description="[low, high] of that forecast for an ordinary day, without a "
                                                 "burst (the forecast's own intervals also hold its history's "
                                                 "bursts)")
    score: float = Field(description="(value - expected) / (high - expected): above 1, out of the interval")
    breakout: bool = Field(description=f"a breakout: above the interval by its margin (score above {1 + MARGIN:g}), "
                                       f"with at least {MIN_SAMPLE} that day")


class Rising(BaseModel):
    measure: Literal["outflow", "inflow"]
    of: Literal["ips", "goods", "character"] = Field(description="what is ranked: IPs, or their goods types or "
                                                                 "characters")
    rows: list[RisingRow] = Field(description="most above their forecast first (docs: concepts/forecasts, "
                                              "Breakouts)")


class Value(BaseModel):
    """A measure: its value, null below its minimum (insufficient, never 0), the count it rests on and, for an
    estimate, its 95 % interval (docs/concepts/measures.md, definition 8)."""

    value: float | None
    n: int
    interval: list[float | None] | None = Field(None, description="[low, high]; null while the value is "
                                                                  "insufficient or where no interval of its kind "
                                                                  "exists (a counted flow); high null: open "
                                                                  "above. An inflow or outflow with an interval is "
                                                                  "an estimate: its pages could not reach back, or "
                                                                  "(inflow) its shops' undecided relists are "
                                                                  "estimated from a sample "
                                                                  "(docs/concepts/measures.md, Estimates)")
    why: str | None = Field(None, description="while the value is null: what it needs, what the window has and, "
                                              "where it can be told, when it will be ready")


class TimeToSell(BaseModel):
    p25: Value
    median: Value
    p75: Value
    listings: int = Field(description="listings created in the window (the Kaplan–Meier estimate's)")
    curve: list[list[float]] = Field(description="[hours, share still unsold] steps; empty below 5 sales")


class SegmentMeasures(BaseModel):
    """A segment's window measures (docs/concepts/measures.md, restricted to its listings: "Segments")."""

    inflow: Value = Field(description="its listings created in the window; n: the IP's tracked hours")
    outflow: Value = Field(description="its listings sold in the window; n: the IP's tracked hours")
    liquidity: Value
    median_price: Value
    p25_price: Value
    p75_price: Value
    trimmed_mean_price: Value
    sell_through: Value
    time_to_sell_hours: TimeToSell
    price_cut_share: Value
    median_price_cut: Value


class Segment(BaseModel):
    key: str = Field(description="the goods type's id, or the character's name")
    label: str = Field(description="the goods type's Japanese name, or the character's name")
    measures: SegmentMeasures


class IpSegments(BaseModel):
    ip_id: int
    keyword: str
    name: str
    hours: int
    by: str = Field(description="goods or character")
    segments: list[Segment] = Field(description="the segments with a listing created or sold in the window, most "
                                                "sold first; a listing in several counts in each")


class SegmentsBoard(BaseModel):
    """What sells across franchises: each goods type (or character) over every IP's listings."""

    hours: int
    by: str = Field(description="goods or character")
    segments: list[Segment] = Field(description="the segments with a listing created or sold in the window, most "
                                                "sold first; flows' n is the window's hours")


class QueueCounts(BaseModel):
    queue: str
    ready: int
    delayed: int
    dead: int
    running: int | None = Field(None, description="taken by a worker (Redis broker only)")


class CrawlerDrift(BaseModel):
    """Signs that the site changed under the crawler, over its latest crawls (lib/crawling/drift.py)."""

    crawls: int
    pages_by_source: dict[str, int] = Field(description="pages read from the search API and from the page (DOM)")
    anomalies: dict[str, int]
    mean_fill: float | None = Field(description="items on pages that had a next page, as a share of a full page")
    alert: list[str] = Field(description="reasons the crawler-drift alert is on; empty when it is off")


class AddressBudget(BaseModel):
    """One address's request budget now (lib/crawling/budget.py): a proxy's digest, or the crawlers' own address."""

    address: str
    limit: int = Field(description="page loads a minute it may begin now: the budget, less after a 429")
    budget: int = Field(description="CRAWL_RATE_LIMIT")
    cut_at: float | None = Field(description="when a 429 last cut it (Unix time); null: it is whole")
    full_at: float | None = Field(description="when it will be whole again, climbing by one a minute")
    loads_last_minute: int = Field(description="page loads it began in the last whole minute, all crawlers")


class CrawlPlan(BaseModel):
    """The request budget's plan as the scheduler last set it (lib/scheduling/budget_plan.py)."""

    budget: float = Field(description="requests an hour the schedule may plan: SCHEDULER_BUDGET_SHARE of the "
                                      "addresses' budgets")
    planned: float = Field(description="requests an hour the IPs' planned intervals spend")
    ips: int = Field(description="IPs planned (those whose flow a result has told)")
    lengthened: int = Field(description="IPs crawled less often than their own interval to stay within the budget")
    price: float = Field(description="listing-hours not yet seen a request an hour is worth; 0: the budget does not "
                                     "bind")
    unseen: float = Field(description="listings created since their IP's last crawl, on average at any moment")
    over: bool = Field(description="even the longest intervals spend more than the budget")
    at: float = Field(description="when it was set (Unix time)")
    reached: float | None = Field(None, description="of the IPs' new listings (weighted by their flows), the share "
                                                    "their last crawls' on-sale pages reached back to the crawl "
                                                    "before; null without a flow")
    deepened: int = Field(0, description="IPs whose last crawl's sold search outran SCHEDULER_PAGES_SOLD pages")
    sold_pages: int = Field(0, description="the sold pages those IPs' crawls read, deeper than the cap where the "
                                           "budget has requests to spare at the IPs' own intervals (included in "
                                           "planned); 0: the cap")
    relist_reads: float = Field(0.0, description="requests an hour the reads back and item checks for undecided "
                                                 "relists spent over the last day, whatever the intervals (included "
                                                 "in planned; the intervals share the rest of the budget)")


class Status(BaseModel):
    scheduled_ips: int
    in_flight: list[int] = Field(description="IPs whose crawl is in flight")
    queues: list[QueueCounts]
    dead_letters: int
    crawler_drift: CrawlerDrift | None = None
    crawl_budgets: list[AddressBudget] = Field(default_factory=list,
                                               description="each address's request budget; empty with "
                                                           "CRAWL_RATE_LIMIT=0 (no limit)")
    crawl_plan: CrawlPlan | None = Field(None, description="the budget's plan; null without a budget "
                                                           "(CRAWL_RATE_LIMIT=0) or before the scheduler set one")


class DeadLetterOut(BaseModel):
    id: str
    message_id: str
    queue: str
    actor: str
    retries: int
    dead_at: float | None
    reason: str | None
    args: list[Any] | None
    kwargs: dict[str, Any] | None
    size: int


class Selection(BaseModel):
    """Which dead letters an operation takes: the named ones (``ids``), or with ``all`` every one (of ``queue``
    when given). ``dry_run`` only says what would be affected (the confirmation step). Naming none is refused
    (400): the document says so (``anyOf``), and ``chosen`` checks it."""

    # strict: the document says booleans, so 0 or "false" is refused (422), not read as False; ``anyOf``: the
    # rule of ``chosen``, for the document
    model_config = ConfigDict(strict=True, json_schema_extra={"anyOf": [
        {"required": ["ids"], "properties": {"ids": {"type": "array", "minItems": 1}}},
        {"required": ["all"], "properties": {"all": {"const": True}}},
    ]})

    ids: list[str] | None = None
    queue: str | None = None
    all: bool = False
    dry_run: bool = False

    def chosen(self) -> list[str] | None:
        """The ids named (None: all); ValueError when the selection names none."""
        if self.all:
            return None
        if not self.ids:
            raise ValueError("name the dead letters (ids) or set all")
        return self.ids


class Affected(BaseModel):
    action: str
    dry_run: bool
    count: int
    letters: list[DeadLetterOut]


class SessionIn(BaseModel):
    model_config = ConfigDict(strict=True)

    token: str


class SessionOut(BaseModel):
    operator: bool
    csrf_token: str | None = None


#: A character's name or alias as the document can state its rules (``lib.segments.character_rules``); those it
#: cannot (a word with no letter or digit, two words the matcher reads alike) are answered with 409.
Word = Annotated[str, StringConstraints(min_length=1, max_length=NAME_MAX_LENGTH, pattern=NO_CONTROL_CHARACTERS)]


class CharacterIn(BaseModel):
    """A character: the name answers give, and the other names titles use for it."""

    model_config = ConfigDict(strict=True, extra="forbid")

    name: Word
    aliases: list[Word] = Field(default_factory=list, max_length=MAX_ALIASES)


class CharactersIn(BaseModel):
    """An IP's whole character list, in the order answers keep."""

    model_config = ConfigDict(strict=True, extra="forbid")

    characters: list[CharacterIn] = Field(max_length=MAX_CHARACTERS)


class CharacterOut(BaseModel):
    name: str
    aliases: list[str]
    created_at: float = Field(description="Unix seconds")
    updated_at: float = Field(description="Unix seconds: when its aliases last changed")


class CharacterList(BaseModel):
    ip_id: int
    characters: list[CharacterOut] = Field(description="in the operator's order, which matches are answered in")


class Resegmented(BaseModel):
    listings: int = Field(description="the IP's stored listings whose titles were matched again")
    added: int = Field(description="segment rows written (a listing that now names a character)")
    removed: int = Field(description="segment rows deleted (a listing that no longer names one)")


class CharacterChange(CharacterList):
    changed: bool = Field(description="whether the request changed the list (false: it was so already)")
    resegmented: Resegmented | None = Field(
        None, description="when the list changed: the IP's stored listings segmented again by it before this "
                          "answer, as `animetop segments reapply --ip ID` does (null when nothing changed)")
