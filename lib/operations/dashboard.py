"""``animetop dashboard``: a small read-only web page over the same caches and tables as the CLI.

    /                 leaderboard by inflow, outflow or liquidity for a chosen window, system status
    /ip/{id}          hourly inflow/outflow bars, the sold-price range, recent alerts
    /api/leaderboard?by=…&hours=…   /api/ip/{id}?hours=…   /api/status   (JSON behind the pages)
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from lib.core.db import database
from lib.core.local_server import LocalHttpServer
from lib.core.settings import Settings
from lib.market.read_side import LEADERBOARD_KINDS, ReadSide

logger = logging.getLogger(__name__)

STYLE = """
body { font-family: system-ui, "Hiragino Sans", "Noto Sans CJK JP", sans-serif; margin: 2rem auto; max-width: 980px;
       color: #1d1d1f; background: #fafafa; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; } h1 a { color: inherit; text-decoration: none; }
.sub { color: #666; margin-bottom: 1.5rem; }
nav a, nav select { margin-right: .6rem; }
nav a.on { font-weight: 700; text-decoration: none; color: #d81b60; }
table { border-collapse: collapse; width: 100%; background: #fff; box-shadow: 0 1px 3px rgba(0,0,0,.08); }
th, td { padding: .5rem .7rem; text-align: right; border-bottom: 1px solid #eee; }
th:nth-child(2), td:nth-child(2) { text-align: left; }
tr:hover td { background: #fff5f8; }
.bar { display: inline-block; height: .6rem; background: #d81b60; border-radius: 3px; vertical-align: middle; }
.cards { display: flex; gap: 1rem; margin: 1.5rem 0; flex-wrap: wrap; }
.card { background: #fff; padding: .8rem 1rem; border-radius: 8px; box-shadow: 0 1px 3px rgba(0,0,0,.08); min-width: 8rem; }
.card b { display: block; font-size: 1.4rem; }
svg { background: #fff; border-radius: 8px; box-shadow: 0 1px 3px rgba(0,0,0,.08); }
.alert { background: #fff3e0; border-left: 4px solid #fb8c00; padding: .5rem .8rem; margin: .4rem 0; }
"""

LEADERBOARD_PAGE = """<!DOCTYPE html><html lang="ja"><head><meta charset="utf-8"><title>animetop</title>
<style>%(style)s</style></head><body>
<h1><a href="/">animetop</a></h1><div class="sub">How hot each franchise is on Mercari, from new listings and sales</div>
<nav id="nav"></nav>
<div class="cards" id="status"></div>
<table id="board"><thead><tr><th>#</th><th>IP</th><th>inflow</th><th>outflow</th><th>liquidity</th><th></th></tr></thead>
<tbody></tbody></table>
<script>
const params = new URLSearchParams(location.search);
const by = params.get("by") || "outflow", hours = params.get("hours") || "24";
document.getElementById("nav").innerHTML = ["inflow", "outflow", "liquidity"].map(k =>
  `<a class="${k === by ? "on" : ""}" href="?by=${k}&hours=${hours}">${k}</a>`).join("") +
  ` <select onchange="location.search='?by=${by}&hours='+this.value">` +
  [6, 24, 72, 168].map(h => `<option ${String(h) === hours ? "selected" : ""} value="${h}">last ${h} h</option>`).join("") +
  `</select>`;
fetch(`/api/leaderboard?by=${by}&hours=${hours}`).then(r => r.json()).then(rows => {
  const top = Math.max(1, ...rows.map(r => r[by] || 0));
  document.querySelector("#board tbody").innerHTML = rows.map(r => `<tr data-ip="${r.ip_id}">
    <td>${r.rank}</td><td><a href="/ip/${r.ip_id}?hours=${hours}">${escape(r.name)}</a></td>
    <td>${r.inflow}</td><td>${r.outflow}</td><td>${r.liquidity === null ? "–" : r.liquidity.toFixed(2)}</td>
    <td><span class="bar" style="width:${Math.round(120 * (r[by] || 0) / top)}px"></span></td></tr>`).join("");
});
fetch("/api/status").then(r => r.json()).then(s => {
  document.getElementById("status").innerHTML = [["IPs scheduled", s.scheduled_ips], ["crawls in flight", s.in_flight],
    ["crawl queue", s.crawl_queue], ["dead letters", s.dead_letters]].map(([k, v]) => `<div class="card">${k}<b>${v}</b></div>`).join("");
});
function escape(t) { const d = document.createElement("div"); d.textContent = t; return d.innerHTML; }
</script></body></html>"""

IP_PAGE = """<!DOCTYPE html><html lang="ja"><head><meta charset="utf-8"><title>animetop – IP %(ip_id)s</title>
<style>%(style)s</style></head><body>
<h1><a href="/">animetop</a> › <span id="name"></span></h1><div class="sub" id="sub"></div>
<h3>Hourly inflow (grey) and outflow (pink)</h3><svg id="flow" width="960" height="220"></svg>
<h3>Sold price range (min–max, dot: average)</h3><svg id="price" width="960" height="220"></svg>
<h3>Recent alerts</h3><div id="alerts"></div>
<script>
const hours = new URLSearchParams(location.search).get("hours") || "24";
fetch(`/api/ip/%(ip_id)s?hours=${hours}`).then(r => r.json()).then(d => {
  document.getElementById("name").textContent = d.name;
  document.getElementById("sub").textContent = `${d.keyword} · weight ${d.weight} · last ${d.hours} h (${d.timezone})`;
  const s = d.series, W = 960, H = 220, pad = 30, n = Math.max(1, s.length), w = (W - 2 * pad) / n;
  const top = Math.max(1, ...s.map(x => Math.max(x.inflow, x.outflow)));
  let flow = "";
  s.forEach((x, i) => {
    const hi = (H - 2 * pad) * x.inflow / top, ho = (H - 2 * pad) * x.outflow / top, X = pad + i * w;
    flow += `<rect class="in" x="${X}" y="${H - pad - hi}" width="${w * .45}" height="${hi}" fill="#bbb"><title>${x.hour} inflow ${x.inflow}</title></rect>`;
    flow += `<rect class="out" x="${X + w * .47}" y="${H - pad - ho}" width="${w * .45}" height="${ho}" fill="#d81b60"><title>${x.hour} outflow ${x.outflow}</title></rect>`;
    if (i %% Math.ceil(n / 8) === 0) flow += `<text x="${X}" y="${H - 8}" font-size="11">${x.hour.slice(11, 16)}</text>`;
  });
  document.getElementById("flow").innerHTML = flow + `<text x="${pad}" y="16" font-size="11">max ${top}/h</text>`;
  const priced = s.filter(x => x.min_price !== null);
  const pmax = Math.max(1, ...priced.map(x => x.max_price));
  let price = "";
  s.forEach((x, i) => {
    if (x.min_price === null) return;
    const X = pad + i * w + w / 2, y = v => H - pad - (H - 2 * pad) * v / pmax;
    price += `<line class="range" x1="${X}" x2="${X}" y1="${y(x.min_price)}" y2="${y(x.max_price)}" stroke="#888" stroke-width="3"/>`;
    price += `<circle cx="${X}" cy="${y(x.avg_price)}" r="4" fill="#d81b60"><title>${x.hour} avg ¥${Math.round(x.avg_price)}</title></circle>`;
  });
  document.getElementById("price").innerHTML = price + `<text x="${pad}" y="16" font-size="11">max ¥${Math.round(pmax).toLocaleString()}</text>`;
  document.getElementById("alerts").innerHTML = d.alerts.length ? d.alerts.map(a =>
    `<div class="alert"><b>${a.rule.replace(/_/g, " ")}</b> at ${a.hour}: ${a.message}</div>`).join("") : "<p>none</p>";
});
</script></body></html>"""


class Dashboard(LocalHttpServer):
    name = "dashboard"

    def __init__(self, settings: Settings, read_side: ReadSide, status: Callable[[], dict[str, Any]], port: int = 8790,
                 host: str = "127.0.0.1") -> None:
        self.settings = settings
        self.read_side = read_side
        self.status = status
        super().__init__(self._handler(), port, host)

    def _handler(self):
        dash = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status: int, body: str, kind: str = "text/html; charset=utf-8") -> None:
                raw = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self):  # noqa: N802
                parts = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                try:
                    hours = max(1, min(24 * 30, int(query.get("hours", 24))))
                    if parts.path == "/":
                        return self._send(200, LEADERBOARD_PAGE % {"style": STYLE})
                    match = re.fullmatch(r"/ip/(\d+)", parts.path)
                    if match:
                        return self._send(200, IP_PAGE % {"style": STYLE, "ip_id": int(match.group(1))})
                    if parts.path == "/api/leaderboard":
                        by = query.get("by", "outflow")
                        if by not in LEADERBOARD_KINDS:
                            return self._send(400, json.dumps({"error": f"unknown leaderboard {by!r}"}),
                                              "application/json")
                        return self._json(dash.read_side.leaderboard(by, hours, int(query.get("limit", 50))))
                    match = re.fullmatch(r"/api/ip/(\d+)", parts.path)
                    if match:
                        try:
                            return self._json(dash.read_side.ip_detail(int(match.group(1)), hours))
                        except LookupError as e:
                            return self._send(404, json.dumps({"error": str(e)}), "application/json")
                    if parts.path == "/api/status":
                        return self._json(dash.status())
                    self._send(404, "not found", "text/plain")
                except ValueError as e:
                    self._send(400, json.dumps({"error": str(e)}), "application/json")
                finally:
                    if not database.is_closed():
                        database.close()

            def _json(self, obj) -> None:
                self._send(200, json.dumps(obj, ensure_ascii=False, default=str), "application/json")

        return Handler


def summary_status(settings: Settings, client, broker) -> dict:
    """The small status block of the dashboard's front page."""
    from lib.messaging.queues import CRAWL
    from lib.operations.status import counts

    now = counts(broker, client)
    return {"scheduled_ips": now["scheduled_ips"], "in_flight": len(now["in_flight_crawls"]),
            "crawl_queue": now["queues"][CRAWL]["ready"],
            "dead_letters": sum(c["dead"] for c in now["queues"].values())}
