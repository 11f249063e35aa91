"""``/api/v1``: the JSON (and CSV) the pages draw, for scripts too. Its OpenAPI document is at
``/api/v1/openapi.json``.

The read side's refusals are answered by the application's handlers (``lib.web.app``), whichever route they
come from: an IP no one has (``UnknownIp``) with 404, a window beyond what the storage keeps
(``WindowBeyondRetention``) with 400; each route declares the ones it can answer (``problems``)."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http import HTTPStatus
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Header, HTTPException, Path, Query, Request, Response, Security
from fastapi.responses import JSONResponse

from lib.core.db import database
from lib.core.settings import Settings
from lib.forecast import breakouts
from lib.forecast import read as forecasts
from lib.market import series
from lib.market.insufficient import left_out_why
from lib.market.leaderboard_text import csv_row
from lib.market.rankings import LEADERBOARD_KINDS
from lib.market.read_side import COMMON_WINDOWS, SEGMENT_COLUMNS, ReadSide, segment_row
from lib.market.retention import max_segment_hours, max_window_hours
from lib.market.windows import HEAT_NEEDS, NEEDS
from lib.messaging.dead_letters import DeadLetters, NotRequeueable
from lib.segments.stored import segment_labels
from lib.web import schemas
from lib.web.auth import CSRF_HEADER, SESSION_COOKIE, SESSION_SECONDS, OperatorAuth, operator_session, operator_token
from lib.web.openapi import bounded_by
from models.base import MAX_AUTO_ID

#: Labels and units of the measures the read side ranks by (their definitions: docs/concepts/measures.md); a
#: measure the read side offers but this does not know is shown under its own name.
MEASURE_LABELS: dict[str, tuple[str, str]] = {
    "heat": ("Heat", "score"), "heat_low": ("Heat, surely (95 % lower bound)", "score"),
    "momentum": ("Momentum", "score"), "outflow": ("Sold", ""),
    "inflow": ("Listed", ""), "liquidity": ("Liquidity", ""), "sell_through": ("Sell-through", "%"),
    "median_price": ("Median price", "¥"), "time_to_sell": ("Time to sell", "hours"),
}


@dataclass
class WebContext:
    """What the API and pages read from and act on.

    Parameters:
      settings: the application's settings.
      read_side: the market's read side (cached leaderboard and IP detail).
      status: the current queue and schedule counts (``lib.operations.status.counts``).
      dead_letters: the broker's dead letters; None where the broker keeps none we can reach.
      auth: the operator token check.
    """

    settings: Settings
    read_side: ReadSide
    status: Callable[[], dict[str, Any]]
    dead_letters: DeadLetters | None
    auth: OperatorAuth


def context(request: Request) -> WebContext:
    ctx: WebContext = request.app.state.context
    return ctx


def db_session() -> Iterator[None]:
    """A request's database connection, closed after it (the server's threads outlive requests)."""
    try:
        yield
    finally:
        if not database.is_closed():
            database.close()


def hours_param(hours: int = Query(24, ge=1, json_schema_extra=bounded_by("RETENTION_WINDOW"),
                                   description="window length in hours, at most RETENTION_WINDOW (`max_hours` of "
                                               "/meta); a longer one is refused with 400")) -> int:
    return hours


#: An IP's id in a path: one no IP can have (beyond the id column's range) is refused (422) before any query.
IpId = Annotated[int, Path(ge=1, le=MAX_AUTO_ID, description="the IP's id (`ip_id` of the leaderboard)")]


def operator(request: Request, ctx: WebContext = Depends(context),
             _token: object = Security(operator_token), _session: object = Security(operator_session),
             _csrf: str | None = Header(None, alias=CSRF_HEADER,
                                        description="the session's CSRF token (`csrf_token` of /meta or of POST "
                                                    "/session): required with the session cookie")) -> None:
    """Let only the operator through (``OperatorAuth.require_operator``: 401 or 403 otherwise), before the body is
    read. The credentials are parameters here only so that the document declares them."""
    ctx.auth.require_operator(request)


router = APIRouter(prefix="/api/v1", dependencies=[Depends(db_session)])
CSV: dict[int | str, dict[str, Any]] = {200: {"content": {"text/csv": {}}}}


def problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses`` of a route that can answer ``statuses`` (besides 422), each with a ``Problem``. A route
    with a JSON body can answer 400 whatever it does: FastAPI's answer to a body that does not parse."""
    return {status: {"model": schemas.Problem, "description": HTTPStatus(status).phrase} for status in statuses}


def measures() -> list[schemas.Measure]:
    return [schemas.Measure(key=k, label=MEASURE_LABELS.get(k, (k, ""))[0], unit=MEASURE_LABELS.get(k, (k, ""))[1])
            for k in LEADERBOARD_KINDS]


@router.get("/meta", response_model=schemas.Meta)
def meta(request: Request, ctx: WebContext = Depends(context)) -> schemas.Meta:
    session = ctx.auth.request_session(request)
    return schemas.Meta(measures=measures(), windows=list(COMMON_WINDOWS),
                        max_hours=max_window_hours(ctx.settings), max_days=ctx.read_side.max_days(),
                        max_segment_hours=max_segment_hours(ctx.settings),
                        timezone=ctx.settings.display_tz,
                        operator_enabled=ctx.auth.enabled, operator=session is not None,
                        csrf_token=ctx.auth.csrf_token(session) if session else None)


def _csv(rows: list[dict[str, Any]], columns: list[str], filename: str) -> Response:
    out = io.StringIO()
    writer = csv.DictWriter(out, columns, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return Response(out.getvalue(), media_type="text/csv; charset=utf-8",
                    headers={"Content-Disposition": f'attachment; filename="{filename}"'})


@router.get("/leaderboard", response_model=schemas.Leaderboard,
            responses={**CSV, **problems(400)})
def leaderboard(ctx: WebContext = Depends(context), hours: int = Depends(hours_param),
                by: str = Query("outflow", json_schema_extra={"enum": list(LEADERBOARD_KINDS)},
                                description="the measure to rank by (see /meta)"),
                q: str = Query("", max_length=100, description="keep IPs whose name or keyword contains this"),
                limit: int = Query(100, ge=1, le=1000),
                format: Literal["json", "csv"] = "json") -> Any:
    if by not in LEADERBOARD_KINDS:
        raise HTTPException(400, f"unknown measure {by!r}; expected one of {', '.join(LEADERBOARD_KINDS)}")
    board, ranked = ctx.read_side.ranking(by, hours)  # every IP: the filter searches them all
    needle = q.strip().casefold()
    rows = [r for r in ranked
            if not needle or needle in str(r["name"]).casefold() or needle in str(r["keyword"]).casefold()][:limit]
    lines = board["sparklines"]
    for row in rows:
        row["sparkline"] = lines[str(row["ip_id"])]
    if format == "csv":
        columns = ["rank", "ip_id", "keyword", "name", *[k for k in LEADERBOARD_KINDS if k not in ("rank",)]]
        flat = [csv_row(r) for r in rows]  # an estimated flow's interval as its low and high
        extra = sorted({k for r in flat for k in r} - set(columns) - {"sparkline", "inflow_interval",
                                                                      "outflow_interval"})
        return _csv(flat, columns + extra, f"animetop-leaderboard-{by}-{hours}h.csv")
    return {"by": by, "hours": hours, "query": q, "total": len(ranked), "rows": rows,
            "left_out": len(board["rows"]) - len(ranked), "left_out_why": left_out_why(by, NEEDS, HEAT_NEEDS)}


def _ip_detail(ctx: WebContext, ip_id: int, hours: int) -> dict[str, Any]:
    detail = dict(ctx.read_side.ip_detail(ip_id, hours))
    detail["latest_sales"] = series.latest_sales(ip_id)
    detail["search_totals"] = series.search_totals(ip_id, ctx.read_side.clock.now() - hours * 3600)
    return detail


@router.get("/ips/{ip_id}", response_model=schemas.IpDetail, responses=problems(400, 404))
def ip_detail(ip_id: IpId, ctx: WebContext = Depends(context), hours: int = Depends(hours_param)) -> Any:
    return _ip_detail(ctx, ip_id, hours)


@router.get("/ips/{ip_id}/series.csv", response_class=Response,
            responses={**CSV, **problems(400, 404)})
def ip_series_csv(ip_id: IpId, ctx: WebContext = Depends(context), hours: int = Depends(hours_param)) -> Response:
    detail = _ip_detail(ctx, ip_id, hours)
    rows = detail["series"]
    columns = list(dict.fromkeys(k for r in rows for k in r)) or ["hour", "inflow", "outflow"]
    return _csv(rows, columns, f"animetop-ip-{ip_id}-{hours}h.csv")


@router.get("/ips/{ip_id}/days", response_model=schemas.IpDays,
            responses={**CSV, **problems(400, 404)})
def ip_days(ip_id: IpId, ctx: WebContext = Depends(context),
            days: int = Query(90, ge=1, json_schema_extra=bounded_by("RETENTION_DAILY"),
                              description="UTC days back, today included; at most RETENTION_DAILY (`max_days` of "
                                          "/meta), reaching before the hourly rows' horizon; more is refused with "
                                          "400"),
            format: Literal["json", "csv"] = "json") -> Any:
    result = ctx.read_side.ip_days(ip_id, days)
    if format == "csv":
        return _csv(result["series"], list(schemas.DayPoint.model_fields), f"animetop-ip-{ip_id}-{days}d.csv")
    return result


@router.get("/ips/{ip_id}/forecast", response_model=schemas.IpForecast,
            responses={**CSV, **problems(404)})
def ip_forecast(ip_id: IpId, ctx: WebContext = Depends(context), format: Literal["json", "csv"] = "json") -> Any:
    """The IP's next 7 days of new listings, sales and sold-price median, each with 80 % and 95 % intervals, forecast
    from its daily rows as days close (docs/concepts/forecasts.md)."""
    result = forecasts.ip_forecast(ip_id, ctx.read_side.clock.now())
    if format == "csv":
        return _csv(forecasts.csv_rows(result), list(forecasts.CSV_COLUMNS), f"animetop-ip-{ip_id}-forecast.csv")
    return result


@router.get("/ips/{ip_id}/segments/forecast", response_model=schemas.IpSegmentForecasts,
            responses={**CSV, **problems(404)})
def ip_segment_forecasts(ip_id: IpId, ctx: WebContext = Depends(context),
                         by: Literal["goods", "character"] = Query("goods", description="goods types or characters"),
                         format: Literal["json", "csv"] = "json") -> Any:
    """The next 7 days of each of the IP's goods types (or characters): new listings, sales and sold-price median,
    each with 80 % and 95 % intervals, forecast from the segment's daily rows (docs/concepts/forecasts.md)."""
    result = forecasts.segment_forecasts(ip_id, by, ctx.read_side.clock.now(), segment_labels(ctx.settings, by))
    if format == "csv":
        return _csv(forecasts.segment_csv_rows(result), list(forecasts.SEGMENT_CSV_COLUMNS),
                    f"animetop-ip-{ip_id}-{by}-forecast.csv")
    return result


@router.get("/segments/forecast", response_model=schemas.BoardNextDays)
def segments_forecast(ctx: WebContext = Depends(context),
                      by: Literal["goods", "character"] = Query("goods", description="goods types or characters"),
                      ) -> Any:
    """What will sell next week across franchises: each goods type's (or character's) sales and new listings expected
    over the next 7 days, the IPs' current forecasts of it added up (docs/concepts/forecasts.md, "Segments")."""
    return forecasts.board_next_days(by, segment_labels(ctx.settings, by), ctx.read_side.clock.now())


@router.get("/rising", response_model=schemas.Rising)
def rising(ctx: WebContext = Depends(context), measure: Literal["outflow", "inflow"] = "outflow",
           limit: int = Query(20, ge=1, le=1000, description="how many rows"),
           of: Literal["ips", "goods", "character"] = Query("ips", description="rank IPs, or their goods types or "
                                                                             "characters")) -> Any:
    """The IPs (or the IPs' goods types or characters) whose last closed day of sales (or new listings) ran furthest
    above the forecast made for it the day before (docs/concepts/forecasts.md, "Breakouts")."""
    return {"measure": measure, "of": of, "rows": breakouts.rising(measure, limit, of)}


@router.get("/ips/{ip_id}/segments", response_model=schemas.IpSegments,
            responses={**CSV, **problems(400, 404)})
def ip_segments(ip_id: IpId, ctx: WebContext = Depends(context),
                hours: int = Query(24, ge=1, json_schema_extra=bounded_by("RETENTION_WINDOW"),
                                   description="window length in hours, at most RETENTION_WINDOW (`max_segment_hours` "
                                               "of /meta; past RETENTION_DETAIL read from the segments' daily "
                                               "summaries); a longer one is refused with 400"),
                by: Literal["goods", "character"] = Query("goods", description="goods types or characters"),
                format: Literal["json", "csv"] = "json") -> Any:
    result = ctx.read_side.segments(ip_id, hours, by)
    if format == "csv":
        return _csv([segment_row(s) for s in result["segments"]], SEGMENT_COLUMNS,
                    f"animetop-ip-{ip_id}-{by}-{hours}h.csv")
    return result


@router.get("/segments", response_model=schemas.SegmentsBoard, responses={**CSV, **problems(400)})
def segments_board(ctx: WebContext = Depends(context),
                   hours: int = Query(168, ge=1, json_schema_extra=bounded_by("RETENTION_WINDOW"),
                                      description="window length in hours, at most RETENTION_WINDOW "
                                                  "(`max_segment_hours` of /meta); a longer one is refused with 400"),
                   by: Literal["goods", "character"] = Query("goods", description="goods types or characters"),
                   format: Literal["json", "csv"] = "json") -> Any:
    """What sells across franchises: each goods type (or character) over every IP's listings."""
    result = ctx.read_side.segments_board(hours, by)
    if format == "csv":
        return _csv([segment_row(s) for s in result["segments"]], SEGMENT_COLUMNS, f"animetop-{by}-{hours}h.csv")
    return result


@router.get("/status", response_model=schemas.Status)
def status(ctx: WebContext = Depends(context)) -> Any:
    now = ctx.status()
    queues = [{"queue": name, **c} for name, c in now["queues"].items()]
    return {"scheduled_ips": now["scheduled_ips"], "in_flight": now["in_flight_crawls"], "queues": queues,
            "dead_letters": sum(c["dead"] for c in now["queues"].values()),
            "crawler_drift": now.get("crawler_drift"), "crawl_budgets": now.get("crawl_budgets", []),
            "crawl_plan": now.get("crawl_plan")}


def _letters(ctx: WebContext) -> DeadLetters:
    if ctx.dead_letters is None:
        raise HTTPException(404, "this broker keeps no dead letters the dashboard can reach")
    return ctx.dead_letters


@router.get("/deadletters", response_model=list[schemas.DeadLetterOut], responses=problems(404))
def dead_letters(ctx: WebContext = Depends(context), queue: str | None = None) -> Any:
    rows = _letters(ctx).list(queue)
    rows.sort(key=lambda d: d.dead_at or 0, reverse=True)
    return [r.as_dict() for r in rows]


def _selected(selection: schemas.Selection) -> list[str] | None:
    try:
        return selection.chosen()
    except ValueError as e:
        raise HTTPException(400, str(e)) from None


@router.post("/deadletters/requeue", response_model=schemas.Affected,
             responses=problems(400, 401, 403, 404, 409),
             dependencies=[Depends(operator)])
def requeue(selection: schemas.Selection, ctx: WebContext = Depends(context)) -> Any:
    letters, idents = _letters(ctx), _selected(selection)
    if selection.dry_run:
        done = letters.select(idents, selection.queue)
    else:
        try:
            done = letters.requeue(idents, selection.queue)
        except NotRequeueable as e:
            raise HTTPException(409, str(e)) from None
    return {"action": "requeue", "dry_run": selection.dry_run, "count": len(done),
            "letters": [d.as_dict() for d in done]}


@router.post("/deadletters/purge", response_model=schemas.Affected,
             responses=problems(400, 401, 403, 404),
             dependencies=[Depends(operator)])
def purge(selection: schemas.Selection, ctx: WebContext = Depends(context)) -> Any:
    letters, idents = _letters(ctx), _selected(selection)
    affected = (letters.select(idents, selection.queue) if selection.dry_run
                else letters.discard(idents, selection.queue))
    return {"action": "purge", "dry_run": selection.dry_run, "count": len(affected),
            "letters": [d.as_dict() for d in affected]}


@router.post("/session", response_model=schemas.SessionOut, responses=problems(400, 403))
def sign_in(body: schemas.SessionIn, request: Request, ctx: WebContext = Depends(context)) -> Any:
    if not ctx.auth.enabled:
        raise HTTPException(403, "the dashboard is read-only: set DASHBOARD_TOKEN to allow changes")
    if not ctx.auth.token_matches(body.token):
        raise HTTPException(403, "wrong operator token")
    cookie = ctx.auth.new_session()
    session = ctx.auth.session_of(cookie)
    assert session is not None
    response = JSONResponse({"operator": True, "csrf_token": ctx.auth.csrf_token(session)})
    response.set_cookie(SESSION_COOKIE, cookie, max_age=SESSION_SECONDS, httponly=True, samesite="strict",
                        secure=request.url.scheme == "https", path="/")
    return response


@router.delete("/session", response_model=schemas.SessionOut)
def sign_out() -> Any:
    response = JSONResponse({"operator": False, "csrf_token": None})
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response
