"use strict";
// The charts, drawn by uPlot (static/vendor): axes in DISPLAY_TZ and in each chart's unit.
const Charts = (() => {
  const {tz} = Animetop;
  const made = new Map();  // target id -> () => uPlot, to redraw at a new width

  function width(target) { return Math.max(260, target.clientWidth || target.parentElement.clientWidth || 600); }
  function tzDate(ts) { return uPlot.tzDate(new Date(ts * 1e3), tz); }
  // The y axis: its unit as the axis label, ¥ and % on the ticks too.
  const UNIT_LABELS = {"¥": "yen (¥)", "%": "share (%)", "/h": "listings per hour", "/day": "listings per day",
                       "days": "days", "score": "score"};
  function yAxis(unit) {
    const label = unit ? (UNIT_LABELS[unit] || unit) : undefined;
    return {size: 72, label, labelSize: label ? 20 : 0, values: (u, splits) => splits.map(v => v === null ? "" :
      unit === "¥" ? `¥${Math.round(v).toLocaleString("en-US")}` : unit === "%" ? `${Math.round(v * 100)}%` :
      (+v.toFixed(2)).toLocaleString("en-US"))};
  }
  // A time axis over at least a day, so that a single point does not stretch it over years.
  const timeScale = {time: true, range: (u, min, max) => max - min < 86400
    ? [min - (86400 - (max - min)) / 2, max + (86400 - (max - min)) / 2] : [min, max]};

  // Canvas has no text for screen readers: the chart describes itself (title, unit, time zone) in aria-label.
  function draw(target, build, unit) {
    made.set(target.id, build);
    target.replaceChildren();
    const plot = build(width(target));
    const title = target.closest("section")?.querySelector("h2")?.textContent || "chart";
    target.setAttribute("role", "img");
    target.setAttribute("aria-label", `${title}: values in ${UNIT_LABELS[unit] || unit || "counts"}, times in ${tz}`);
    target.dataset.drawn = "1";
    return plot;
  }
  function empty(target, text) {
    target.replaceChildren(Animetop.el("p", {class: "insufficient"}, text));
    target.dataset.drawn = "0";
  }

  // Bars of two series at the same times (listed wide and light, sold narrow and dark in front).
  function flows(target, xs, listed, sold, unit) {
    if (!xs.length) return empty(target, "No data in this window yet.");
    const bars = (size) => uPlot.paths.bars({size: [size, 60], align: 0});
    return draw(target, (w) => new uPlot({
      width: w, height: 220, tzDate,
      scales: {x: timeScale, y: {range: (u, min, max) => [0, Math.max(1, max) * 1.08]}},
      axes: [{}, yAxis(unit)],
      series: [{}, {label: `Listed (${unit})`, fill: "#90caf9", stroke: "#64b5f6", paths: bars(0.8), points: {show: false}},
                   {label: `Sold (${unit})`, fill: "#d81b60", stroke: "#ad1457", paths: bars(0.4), points: {show: false}}],
    }, [xs, listed, sold], target), unit);
  }

  // The median line inside its quartile band.
  function band(target, xs, median, p25, p75, unit) {
    if (!xs.length || median.every(v => v === null)) return empty(target, "No sale with a real price in this window.");
    return draw(target, (w) => new uPlot({
      width: w, height: 220, tzDate,
      scales: {x: timeScale},
      axes: [{}, yAxis(unit)],
      series: [{}, {label: "75th percentile", stroke: "rgba(216,27,96,.35)", width: 1, spanGaps: false},
                   {label: "25th percentile", stroke: "rgba(216,27,96,.35)", width: 1},
                   {label: "Median", stroke: "#d81b60", width: 2, points: {show: true, size: 5}}],
      bands: [{series: [1, 2], fill: "rgba(216,27,96,.12)"}],
    }, [xs, p75, p25, median], target), unit);
  }

  // Past days' values, then a forecast: its point line inside its 80 % band, inside its 95 % band.
  function forecast(target, xs, actual, mean, lo80, hi80, lo95, hi95, unit) {
    if (!xs.length) return empty(target, "No forecast yet.");
    return draw(target, (w) => new uPlot({
      width: w, height: 220, tzDate,
      scales: {x: timeScale, y: {range: (u, min, max) => [0, Math.max(1, max) * 1.08]}},
      axes: [{}, yAxis(unit)],
      series: [{}, {label: "95 % high", stroke: "rgba(216,27,96,.25)", width: 1},
                   {label: "95 % low", stroke: "rgba(216,27,96,.25)", width: 1},
                   {label: "80 % high", stroke: "rgba(216,27,96,.45)", width: 1},
                   {label: "80 % low", stroke: "rgba(216,27,96,.45)", width: 1},
                   {label: "Forecast", stroke: "#d81b60", width: 2, dash: [6, 4]},
                   {label: `Sold (${unit})`, stroke: "#ad1457", width: 2, points: {show: true, size: 5}}],
      bands: [{series: [1, 2], fill: "rgba(216,27,96,.10)"}, {series: [3, 4], fill: "rgba(216,27,96,.18)"}],
    }, [xs, hi95, lo95, hi80, lo80, mean, actual], target), unit);
  }

  // Lines against time (several series, one unit).
  function lines(target, xs, series, unit) {
    if (!xs.length) return empty(target, "No data in this window yet.");
    const colors = ["#1e88e5", "#d81b60", "#43a047", "#fb8c00"];
    return draw(target, (w) => new uPlot({
      width: w, height: 220, tzDate,
      scales: {x: timeScale},
      axes: [{}, yAxis(unit)],
      series: [{}, ...series.map((s, i) => ({label: s.label, stroke: colors[i % colors.length], width: 2,
                                              points: {show: true, size: 4}}))],
    }, [xs, ...series.map(s => s.values)], target), unit);
  }

  // A step curve on a numeric x axis (hours since listed): the share of listings still unsold.
  function survival(target, hours, share) {
    if (!hours.length) return empty(target, "Not enough sales to estimate time to sell.");
    return draw(target, (w) => new uPlot({
      width: w, height: 220,
      scales: {x: {time: false}, y: {range: [0, 1]}},
      axes: [{label: "hours since listed", labelSize: 20, values: (u, s) => s.map(v => `${+v.toFixed(1)} h`)},
             {...yAxis("%"), label: "still unsold (%)"}],
      series: [{label: "hours", value: (u, v) => v === null ? "–" : `${v.toFixed(1)} h`},
               {label: "still unsold", stroke: "#d81b60", width: 2, paths: uPlot.paths.stepped({align: 1}),
                value: (u, v) => v === null ? "–" : `${(v * 100).toFixed(1)}%`}],
    }, [hours, share], target), "%");
  }

  // A tiny line without axes or legend.
  function sparkline(target, values) {
    const xs = values.map((_, i) => i);
    return new uPlot({
      width: 120, height: 28, legend: {show: false}, cursor: {show: false},
      scales: {x: {time: false}, y: {range: [0, Math.max(1, ...values)]}},
      axes: [{show: false}, {show: false}],
      series: [{}, {stroke: "#d81b60", width: 1.5, fill: "rgba(216,27,96,.15)", points: {show: false}}],
    }, [xs, values], target);
  }

  // ---- 95 % intervals (docs/concepts/measures.md, definition 8), drawn as whiskers in SVG ----
  const SVG = "http://www.w3.org/2000/svg";
  function svg(tag, attrs) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    return node;
  }
  function interval95(low, high, unit) {
    return `95 %: ${Animetop.value(low, unit)} – ${high === null ? "open above" : Animetop.value(high, unit)}`;
  }

  // One measure's interval on its own scale (a card): "95 %: low – high" over a whisker whose dot is the value
  // (where it sits between the ends shows the interval's skew); an interval open above is dashed to the right.
  function interval(m, unit) {
    if (!m || !m.interval || m.value === null) return null;
    const [low, high] = m.interval;
    const drawing = svg("svg", {viewBox: "0 0 100 10", class: "whisker", "aria-hidden": "true"});
    const tick = (x) => svg("line", {x1: x, x2: x, y1: 1, y2: 9});
    const span = high === null ? null : high - low;
    const at = span ? 4 + 92 * (m.value - low) / span : (high === null ? 30 : 50);
    drawing.append(svg("line", {x1: 4, x2: high === null ? 60 : 96, y1: 5, y2: 5}), tick(4));
    drawing.append(high === null ? svg("line", {x1: 60, x2: 96, y1: 5, y2: 5, "stroke-dasharray": "3 2"}) : tick(96));
    drawing.append(svg("circle", {cx: at, cy: 5, r: 2.5}));
    return Animetop.el("div", {class: "interval", "data-low": low, "data-high": high === null ? "" : high,
                               title: "95 % interval (docs: Market measures, definition 8)"}, drawing,
                       interval95(low, high, unit));
  }

  // A scale shared by small multiples, so that their whiskers compare at a glance: the span of the values given
  // (nulls skipped), mapped to 4–116 across a 120-wide drawing; ``low`` and ``high`` say what its ends stand for
  // (null: no value to scale).
  function scale(values) {
    const known = values.filter(v => typeof v === "number" && Number.isFinite(v));
    const lo = known.length ? Math.min(...known) : null, hi = known.length ? Math.max(...known) : null;
    const at = (v) => 4 + 112 * (hi > lo ? (v - lo) / (hi - lo) : 0.5);
    return Object.assign(at, {low: lo, high: hi});
  }

  // One measure's interval on a shared scale ``x`` (``scale``): the line from low to high with a dot at the value,
  // dashed to the right edge when open above, over an optional light ``band`` [low, high] (the quartiles of a
  // price: the spread of the prices, beside the median's own uncertainty). Without an interval: a dash.
  function whisker(m, unit, x, band) {
    if (!m || !m.interval || m.value === null) return Animetop.el("span", {class: "muted"}, "–");
    const [low, high] = m.interval;
    const drawing = svg("svg", {viewBox: "0 0 120 10", class: "whisker", role: "img",
                                "aria-label": interval95(low, high, unit), "data-low": low,
                                "data-high": high === null ? "" : high});
    if (band && band[0] !== null && band[1] !== null) {
      drawing.append(svg("rect", {class: "band", x: x(band[0]), y: 2, width: Math.max(x(band[1]) - x(band[0]), 0.5),
                                  height: 6}));
    }
    drawing.append(svg("line", {x1: x(low), x2: high === null ? x(m.value) : x(high), y1: 5, y2: 5}));
    // open above: dashed on to the drawing's very edge, past the scale's end, so it shows even from a dot there
    if (high === null) drawing.append(svg("line", {x1: x(m.value), x2: 120, y1: 5, y2: 5, "stroke-dasharray": "3 2"}));
    drawing.append(svg("circle", {cx: x(m.value), cy: 5, r: 2.5}));
    return drawing;
  }

  let pending = null;
  window.addEventListener("resize", () => {
    clearTimeout(pending);
    pending = setTimeout(() => {
      for (const [id, build] of made) {
        const target = document.getElementById(id);
        if (target) { target.replaceChildren(); build(width(target)); }
      }
    }, 150);
  });

  return {flows, band, forecast, lines, survival, sparkline, empty, interval, interval95, scale, whisker};
})();
