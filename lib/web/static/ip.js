"use strict";
(async () => {
  const {el, api, meta, showError, value, measure, params, setParams, windowLabel, time, safeUrl} = Animetop;
  const ipId = document.body.dataset.ipId;
  const hoursSelect = document.getElementById("hours");
  const daysSelect = document.getElementById("days");
  const segmentsBy = document.getElementById("segments-by");
  let siteInfo = null;  // /meta, read once
  const ts = (iso) => Date.parse(iso) / 1000;

  function cards(d) {
    const m = d.measures || {};
    const tts = m.time_to_sell_hours || {};
    const items = [["Heat", m.heat, "score"], ["Momentum", m.momentum, "score"], ["Listed", m.inflow, ""],
                   ["Sold", m.outflow, ""], ["Liquidity (sold / listed)", m.liquidity, ""],
                   ["Sell-through", m.sell_through, "%"], ["Median sold price", m.median_price, "¥"],
                   ["Median time to sell", tts.median, "hours"], ["On sale now (site total)", m.supply, ""],
                   ["Hours of supply", m.hours_of_supply, ""], ["Coverage of sales", m.coverage, "%"]];
    document.getElementById("cards").replaceChildren(...items.map(([label, v, unit]) =>
      // a flow with an interval is an estimate: its pages could not reach back, or its shops' undecided relists
      // are estimated from a sample (docs: Market measures, Estimates)
      el("div", {class: "card"}, el("b", {}, measure(v, unit)),
         (label === "Listed" || label === "Sold") && v && v.interval ? `${label} (≈ estimate)` : label,
         Charts.interval(v, unit),
         v && v.why ? el("div", {class: "why"}, v.why) : null,
         v && v.n !== undefined ? el("div", {class: "muted"}, `n = ${v.n}`) : null)));
  }

  // The per-day series (/days: the daily rows, reaching back RETENTION_DAILY): flows and the sold-price band.
  async function loadDays(days) {
    setParams({days});
    daysSelect.value = days;
    document.getElementById("days-csv").href = `/api/v1/ips/${ipId}/days?days=${days}&format=csv`;
    document.getElementById("days-json").href = `/api/v1/ips/${ipId}/days?days=${days}`;
    const d = await api(`/api/v1/ips/${ipId}/days?days=${days}`);
    const rows = d.series.map(r => ({...r, x: Date.parse(`${r.day}T00:00:00Z`) / 1000}));
    if (rows.length === 1) {  // one day alone: empty neighbours keep the time axis to days, not years
      rows.unshift({x: rows[0].x - 86400, inflow: null, outflow: null});
      rows.push({x: rows[1].x + 86400, inflow: null, outflow: null});
    }
    const xs = rows.map(r => r.x);
    Charts.flows(document.getElementById("flow-daily"), xs, rows.map(r => r.inflow), rows.map(r => r.outflow), "/day");
    Charts.band(document.getElementById("price-daily"), xs, rows.map(r => r.median_price ?? null),
                rows.map(r => r.p25_price ?? null), rows.map(r => r.p75_price ?? null), "¥");
    await loadForecast(d.series.filter(r => !r.partial));
  }

  // The next 7 days' sales (/forecast, docs: concepts/forecasts) after the last 21 closed days' sales.
  async function loadForecast(closed) {
    document.getElementById("forecast-csv").href = `/api/v1/ips/${ipId}/forecast?format=csv`;
    document.getElementById("forecast-json").href = `/api/v1/ips/${ipId}/forecast`;
    const f = (await api(`/api/v1/ips/${ipId}/forecast`)).forecasts.find(m => m.measure === "outflow");
    const note = document.getElementById("forecast-note");
    const target = document.getElementById("forecast-daily");
    if (!f.days.length) {
      note.textContent = "";
      return Charts.empty(target, `No forecast yet: ${f.why}.`);
    }
    note.textContent = `${f.model} fitted on ${f.history_days} days up to ${f.origin}: the dashed line inside its ` +
      "80 % (darker) and 95 % bands; sold per day before it.";
    const past = closed.slice(-21).map(r => ({x: Date.parse(`${r.day}T00:00:00Z`) / 1000, actual: r.outflow}));
    const ahead = f.days.map(d => ({x: Date.parse(`${d.day}T00:00:00Z`) / 1000, mean: d.mean,
                                    lo80: d.interval_80[0], hi80: d.interval_80[1],
                                    lo95: d.interval_95[0], hi95: d.interval_95[1]}));
    const rows = [...past.filter(p => p.x < ahead[0].x), ...ahead];
    const col = (name) => rows.map(r => r[name] ?? null);
    return Charts.forecast(target, col("x"), col("actual"), col("mean"), col("lo80"), col("hi80"), col("lo95"),
                           col("hi95"), "/day");
  }

  function price(d) {
    const xs = d.series.map(r => ts(r.hour));
    const note = document.getElementById("price-note");
    const target = document.getElementById("price");
    if (d.series.some(r => "median_price" in r)) {
      note.textContent = "Median of the hour's sales with a real price, inside the 25th–75th percentile band.";
      return Charts.band(target, xs, d.series.map(r => r.median_price ?? null), d.series.map(r => r.p25_price ?? null),
                         d.series.map(r => r.p75_price ?? null), "¥");
    }
    note.textContent = "Average of the hour's sales with a real price, inside the lowest–highest band.";
    return Charts.band(target, xs, d.series.map(r => r.avg_price ?? null), d.series.map(r => r.min_price ?? null),
                       d.series.map(r => r.max_price ?? null), "¥");
  }

  function timeToSell(d) {
    const note = document.getElementById("tts-note"), target = document.getElementById("tts");
    const tts = (d.measures || {}).time_to_sell_hours || {};
    const part = (name) => tts[name] && tts[name].value !== null ? value(tts[name].value, "hours") : "–";
    note.textContent = `Of ${tts.listings ?? 0} listings created in the window (Kaplan–Meier; unsold ones censored at ` +
      `their last sighting): a quarter sold within ${part("p25")}, half within ${part("median")}, three quarters ` +
      `within ${part("p75")}.`;
    const curve = tts.curve || [];
    if (!curve.length) return Charts.empty(target, "Not enough observed sales in this window to draw the curve.");
    // from 100% unsold at listing time, stepping down at each observed sale
    return Charts.survival(target, [0, ...curve.map(p => p[0])], [1, ...curve.map(p => p[1])]);
  }

  function supply(d) {
    const points = d.search_totals;
    const note = document.getElementById("supply-note");
    note.textContent = "Listings the site counts in the on-sale and sold searches at each crawl, how many of the IP's our pages read, and how many listings they held that were not the IP's (the site's padding, not counted).";
    return Charts.lines(document.getElementById("supply"), points.map(p => p.crawled_at), [
      {label: "On sale (site total)", values: points.map(p => p.on_sale)},
      {label: "Sold (site total)", values: points.map(p => p.sold)},
      {label: "On sale read", values: points.map(p => p.on_sale_read)},
      {label: "Sold read", values: points.map(p => p.sold_read)},
      {label: "Not the IP's (not counted)", values: points.map(p => (p.on_sale_missed == null && p.sold_missed == null)
        ? null : (p.on_sale_missed || 0) + (p.sold_missed || 0))}], "");
  }

  function cuts(d) {
    const m = d.measures || {}, share = m.price_cut_share, size = m.median_price_cut;
    document.getElementById("cuts").textContent = share && share.value !== null
      ? `${(share.value * 100).toFixed(1)}% of ${share.n} sold listings were cut before selling` +
        (size && size.value !== null ? `; the median cut was ${(size.value * 100).toFixed(1)}% of the first price.` : ".")
      : `Not enough sold listings with a price history in this window (${share ? share.n : 0}).`;
  }

  function alerts(d) {
    const list = document.getElementById("alerts");
    list.replaceChildren(...(d.alerts.length ? d.alerts.map(a => el("li", {},
      el("b", {}, a.rule), ` · ${time(ts(a.hour))} · `, a.message)) : [el("li", {class: "muted"}, "No alerts.")]));
  }

  function sales(d) {
    const body = document.querySelector("#sales tbody");
    body.replaceChildren(...d.latest_sales.map(s => {
      const url = safeUrl(s.item_url);
      return el("tr", {}, el("td", {}, time(s.sold_at)),
        el("td", {class: "name"}, url ? el("a", {href: url, rel: "noopener noreferrer", target: "_blank"}, s.title || s.source_id)
                                      : (s.title || s.source_id)),
        el("td", {class: "num"}, s.price === null ? el("span", {class: "insufficient"}, "no price") : value(s.price, "¥")));
    }));
  }

  // A segment's sales expected over the next 7 days (docs/concepts/forecasts.md, "Segments"), or why there is no
  // forecast of them.
  function expectedSales(segment) {
    if (!segment) return el("span", {class: "insufficient", title: "no daily row of this segment yet"}, "no forecast");
    if (segment.next_days.outflow === null) {
      const outflow = segment.forecasts.find(f => f.measure === "outflow");
      return el("span", {class: "insufficient", title: outflow.why || ""}, "no forecast");
    }
    return value(segment.next_days.outflow, "");
  }

  // The IP's segments (goods types or characters): a row each, the median sold price's 95 % interval drawn as a
  // small multiple on one price scale for every row, so the segments' prices compare at a glance.
  async function loadSegments(hours, by) {
    const h = Math.min(Number(hours), siteInfo.max_segment_hours);
    const note = document.getElementById("segments-note");
    document.getElementById("segments-csv").href = `/api/v1/ips/${ipId}/segments?hours=${h}&by=${by}&format=csv`;
    const [d, ahead] = await Promise.all([api(`/api/v1/ips/${ipId}/segments?hours=${h}&by=${by}`),
                                          api(`/api/v1/ips/${ipId}/segments/forecast?by=${by}`)]);
    const next = new Map(ahead.segments.map(s => [s.key, s]));
    note.textContent = `Listings of the last ${windowLabel(h)} by ${by === "goods" ? "goods type" : "character"} ` +
      "(a listing in several counts in each)" + (h < Number(hours) ? `; segments reach back ${windowLabel(h)} at most.` : ".");
    const prices = d.segments.map(s => s.measures.median_price);
    const x = Charts.scale(prices.flatMap(m => m.interval ? [...m.interval, m.value] : []));
    const body = document.querySelector("#segments tbody");
    body.replaceChildren(...(d.segments.length ? d.segments.map(s => {
      const m = s.measures;
      return el("tr", {"data-key": s.key}, el("td", {class: "name"}, s.label === s.key ? s.key : `${s.label} (${s.key})`),
        el("td", {class: "num"}, value(m.outflow.value, "")), el("td", {class: "num"}, value(m.inflow.value, "")),
        el("td", {class: "num"}, measure(m.median_price, "¥")), el("td", {}, Charts.whisker(m.median_price, "¥", x)),
        el("td", {class: "num"}, measure(m.sell_through, "%")),
        el("td", {class: "num"}, measure(m.time_to_sell_hours.median, "hours")),
        el("td", {class: "num next-week"}, expectedSales(next.get(s.key))));
    }) : [el("tr", {}, el("td", {colspan: 8, class: "muted"}, by === "goods"
      ? "No listing was created or sold in this window."
      : "No listing names a character of this IP in this window (characters are matched from its list: animetop ip characters)."))]));
  }

  async function load(hours) {
    setParams({hours});
    hoursSelect.value = hours;
    document.getElementById("csv").href = `/api/v1/ips/${ipId}/series.csv?hours=${hours}`;
    document.getElementById("json").href = `/api/v1/ips/${ipId}?hours=${hours}`;
    const d = await api(`/api/v1/ips/${ipId}?hours=${hours}`);
    document.getElementById("name").textContent = d.name;
    document.getElementById("keyword").textContent = `search keyword: ${d.keyword}${d.active ? "" : " (paused)"}`;
    document.title = `${d.name} · animetop`;
    // the window's last hours hold only what the IP's last crawl saw (docs: Market measures, definition 5)
    document.getElementById("crawled").textContent = d.last_crawled_at
      ? `Last crawled ${time(ts(d.last_crawled_at))}: what was listed or sold since shows after its next crawl.`
      : "Not crawled yet.";
    cards(d);
    const xs = d.series.map(r => ts(r.hour));
    Charts.flows(document.getElementById("flow-hourly"), xs, d.series.map(r => r.inflow), d.series.map(r => r.outflow), "/h");
    price(d); timeToSell(d); supply(d); cuts(d); alerts(d); sales(d);
    await loadSegments(hours, segmentsBy.value);
  }

  try {
    const info = siteInfo = await meta();
    const current = Number(params().get("hours") || 168);
    const windows = [...new Set([...info.windows, current])].sort((a, b) => a - b);
    hoursSelect.replaceChildren(...windows.map(h => el("option", {value: h}, `last ${windowLabel(h)}`)));
    hoursSelect.addEventListener("change", () => load(hoursSelect.value).catch(showError));
    const currentDays = Number(params().get("days") || 90);
    const ranges = [...new Set([30, 90, 365, info.max_days, currentDays])].filter(n => n <= info.max_days).sort((a, b) => a - b);
    daysSelect.replaceChildren(...ranges.map(n => el("option", {value: n}, `last ${n} days`)));
    daysSelect.addEventListener("change", () => loadDays(daysSelect.value).catch(showError));
    segmentsBy.addEventListener("change", () => loadSegments(hoursSelect.value, segmentsBy.value).catch(showError));
    await Promise.all([load(String(current)), loadDays(String(Math.min(currentDays, info.max_days)))]);
    document.body.dataset.ready = "1";
  } catch (error) { showError(error); }
})();
