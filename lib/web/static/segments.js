"use strict";
// What sells across franchises (GET /api/v1/segments): each goods type (or character) over every IP's listings,
// its measures with their n, their 95 % intervals and, when insufficient, why; then the same segments as small
// multiples, every whisker of a measure on one scale.
(async () => {
  const {el, api, meta, showError, value, measure, params, setParams, windowLabel} = Animetop;
  const bySelect = document.getElementById("by"), hoursSelect = document.getElementById("hours");
  // The measures shown, in the API's names (docs/concepts/measures.md, "Segments"); for the small multiples,
  // ``zero``: the scale starts at 0 (a share: the panels' dots then read as proportions of each other),
  // ``band``: the spread drawn behind the whisker.
  const MEASURES = [
    {key: "outflow", label: "Sold", unit: "", of: m => m.outflow},
    {key: "inflow", label: "Listed", unit: "", of: m => m.inflow},
    {key: "median_price", label: "Median sold price", unit: "¥", of: m => m.median_price,
     band: m => [m.p25_price.value, m.p75_price.value], multiple: "price (median; band: quartiles)"},
    {key: "sell_through", label: "Sell-through", unit: "%", of: m => m.sell_through, zero: true,
     multiple: "sell-through"},
    {key: "time_to_sell", label: "Median time to sell", unit: "hours", of: m => m.time_to_sell_hours.median,
     multiple: "time to sell (median)"},
    {key: "price_cut_share", label: "Cut before selling", unit: "%", of: m => m.price_cut_share},
  ];
  // Panels drawn at most: a character board can list many; the table lists them all.
  const MULTIPLES = 36;
  let info, generation = 0;

  function windows(current) {
    const longest = info.max_segment_hours;
    return [...new Set([...info.windows.filter(h => h <= longest), longest, current])].sort((a, b) => a - b);
  }

  function state() {
    const p = params();
    const asked = Number(p.get("hours") || 168);
    return {by: p.get("by") === "character" ? "character" : "goods",
            hours: String(Number.isInteger(asked) && asked >= 1 ? Math.min(asked, info.max_segment_hours) : 168)};
  }

  // A measure's cell: its value (null: insufficient), its interval's ends, its n and, when null, why.
  function cell(spec, m) {
    const shown = spec.of(m);
    const [low, high] = shown.interval || [null, null];
    return el("td", {class: "num", "data-key": spec.key, "data-value": shown.value === null ? "" : shown.value},
      el("div", {class: "value"}, measure(shown, spec.unit)),
      shown.interval ? el("div", {class: "interval"}, Charts.interval95(low, high, spec.unit)) : null,
      el("div", {class: "n muted"}, `n = ${shown.n}`),
      shown.value === null && shown.why ? el("div", {class: "why"}, shown.why) : null);
  }

  // The sales expected over the next 7 days: each IP's forecast of the segment added up (docs/concepts/forecasts.md,
  // "Segments"), with how many IPs have one.
  function expected(row) {
    const none = !row || row.outflow === null;
    return el("td", {class: "num next-week", "data-key": "next_week", "data-value": none ? "" : row.outflow},
      el("div", {class: "value"}, none ? el("span", {class: "insufficient",
        title: "no IP has a forecast of this segment's sales yet"}, "no forecast") : value(row.outflow, "")),
      el("div", {class: "n muted"}, `${row ? row.ips : 0} IP${row && row.ips === 1 ? "" : "s"}`));
  }

  function table(d, ahead) {
    const next = new Map(ahead.segments.map(s => [s.key, s]));
    document.getElementById("board-head").replaceChildren(el("th", {scope: "col"}, d.by === "goods" ? "Goods type" : "Character"),
      ...MEASURES.map(spec => el("th", {scope: "col", class: "num"}, spec.label)),
      el("th", {scope: "col", class: "num", title: "the IPs' forecasts of its sales over the next 7 days (UTC), added up"},
         "Sales expected, next 7 days"));
    document.querySelector("#segments-board tbody").replaceChildren(...d.segments.map(s =>
      el("tr", {"data-key": s.key}, el("td", {class: "name"}, s.label === s.key ? s.key : `${s.label} (${s.key})`),
         ...MEASURES.map(spec => cell(spec, s.measures)), expected(next.get(s.key)))));
    const empty = document.getElementById("board-empty");
    empty.hidden = d.segments.length > 0;
    empty.textContent = d.by === "goods" ? "No listing was created or sold in this window."
      : "No listing names a character in this window (characters are matched from each IP's list: animetop ip characters).";
  }

  // Small multiples: a panel per segment (the most sold first), a whisker per estimate, each measure on one
  // scale across the panels (Charts.scale), so a segment's price or speed reads against every other's.
  function multiples(d) {
    const shown = d.segments.slice(0, MULTIPLES);
    const drawn = MEASURES.filter(spec => spec.multiple);
    const scales = Object.fromEntries(drawn.map(spec => {
      const values = shown.flatMap(s => {
        const m = spec.of(s.measures);
        return m.interval ? [...m.interval, m.value, ...(spec.band ? spec.band(s.measures) : [])] : [];
      });
      return [spec.key, Charts.scale(spec.zero && values.length ? [0, ...values] : values)];
    }));
    document.getElementById("multiples").replaceChildren(...shown.map(s => el("figure", {class: "multiple", "data-key": s.key},
      el("figcaption", {}, s.label === s.key ? s.key : `${s.label} (${s.key})`),
      ...drawn.map(spec => {
        const m = spec.of(s.measures);
        return el("div", {class: "row", "data-key": spec.key}, el("span", {class: "muted"}, spec.multiple),
          el("span", {class: "num"}, measure(m, spec.unit)),
          Charts.whisker(m, spec.unit, scales[spec.key], spec.band && m.interval ? spec.band(s.measures) : null));
      }))));
    const ends = drawn.map(spec => scales[spec.key].low === null ? null
      : `${spec.multiple.split(" (")[0]} ${value(scales[spec.key].low, spec.unit)} – ${value(scales[spec.key].high, spec.unit)}`)
      .filter(Boolean);
    document.getElementById("multiples-note").textContent = !shown.length ? "Nothing to draw in this window." :
      `Each line is a 95 % interval, its dot the value; dashed to the right: open above; a dash: insufficient. ` +
      `One scale per measure for every panel: ${ends.join("; ")}.` +
      (d.segments.length > shown.length ? ` The ${shown.length} most sold of ${d.segments.length}.` : "");
  }

  async function load(change = {}) {
    const s = {...state(), ...change};
    setParams(s);
    hoursSelect.replaceChildren(...windows(Number(s.hours)).map(h => el("option", {value: h}, `last ${windowLabel(h)}`)));
    bySelect.value = s.by; hoursSelect.value = s.hours;
    const query = new URLSearchParams({hours: s.hours, by: s.by});
    document.getElementById("csv").href = `/api/v1/segments?${query}&format=csv`;
    document.getElementById("json").href = `/api/v1/segments?${query}`;
    const mine = ++generation;
    const [d, ahead] = await Promise.all([api(`/api/v1/segments?${query}`), api(`/api/v1/segments/forecast?by=${s.by}`)]);
    if (mine !== generation) return;  // a newer request replaced this one
    document.getElementById("board-note").textContent = `Listings of the last ${windowLabel(d.hours)} of every IP, by ` +
      `${d.by === "goods" ? "goods type" : "character"} (a listing in several counts in each), most sold first; ` +
      `segments reach back ${windowLabel(info.max_segment_hours)} at most.` + (ahead.stale_ips ? ` Next week's ` +
      `sales leave out ${ahead.stale_ips} IP${ahead.stale_ips === 1 ? "" : "s"} whose forecasts are not current ` +
      `(paused, or no longer tracked).` : "");
    table(d, ahead);
    multiples(d);
  }

  try {
    info = await meta();
    bySelect.addEventListener("change", () => load({by: bySelect.value}).catch(showError));
    hoursSelect.addEventListener("change", () => load({hours: hoursSelect.value}).catch(showError));
    document.getElementById("controls").addEventListener("submit", (e) => e.preventDefault());
    await load();
    document.body.dataset.ready = "1";
  } catch (error) { showError(error); }
})();
