"use strict";
(async () => {
  const {el, api, meta, showError, value, params, setParams, windowLabel} = Animetop;
  const board = document.getElementById("board");
  const bySelect = document.getElementById("by"), hoursSelect = document.getElementById("hours");
  const filter = document.getElementById("q");
  let info, generation = 0;

  function state() {
    const p = params();
    return {by: p.get("by") || "outflow", hours: p.get("hours") || "24", q: p.get("q") || ""};
  }

  function header(current) {
    const head = document.getElementById("board-head");
    head.replaceChildren(el("th", {scope: "col", class: "num"}, "#"), el("th", {scope: "col"}, "IP"),
      ...info.measures.map(m => el("th", {scope: "col", class: "num", "aria-sort": m.key === current ? "descending" : null},
        el("button", {type: "button", class: "sort", "data-key": m.key, onclick: () => load({by: m.key})},
          m.label))),  // values carry their units
      el("th", {scope: "col", class: "hide-narrow"}, "Sold over the window"));
  }

  // a flow with an interval is an estimate: its pages could not reach back, or its shops' undecided relists are
  // estimated from a sample (docs: Market measures, Estimates)
  function cell(row, m) {
    const interval = row[`${m.key}_interval`];
    if (!interval || row[m.key] === null) return value(row[m.key], m.unit);
    const [low, high] = interval.map(v => v === null ? "…" : Math.round(v).toLocaleString());
    return el("span", {class: "estimate", title: `estimate, 95 % interval ${low}–${high}`},
      `≈${value(Math.round(row[m.key]), m.unit)}`);
  }

  async function load(change = {}) {
    const s = {...state(), ...change};
    setParams(s);
    bySelect.value = s.by; hoursSelect.value = s.hours; filter.value = s.q;
    const query = new URLSearchParams({by: s.by, hours: s.hours, q: s.q, limit: "200"});
    document.getElementById("csv").href = `/api/v1/leaderboard?${query}&format=csv`;
    document.getElementById("json").href = `/api/v1/leaderboard?${query}`;
    const mine = ++generation;
    const data = await api(`/api/v1/leaderboard?${query}`);
    if (mine !== generation) return;  // a newer request replaced this one
    header(s.by);
    const body = board.tBodies[0];
    body.replaceChildren(...data.rows.map(row => {
      const spark = el("div", {class: "spark", "aria-hidden": "true"});
      const tr = el("tr", {"data-ip-id": row.ip_id},
        el("td", {class: "num"}, row.rank),
        el("td", {class: "name"}, el("a", {href: `/ip/${row.ip_id}?hours=${s.hours}`}, row.name),
           row.keyword !== row.name ? el("div", {class: "muted"}, row.keyword) : null),
        ...info.measures.map(m => el("td", {class: "num", "data-key": m.key}, cell(row, m))),
        el("td", {class: "hide-narrow"}, spark));
      requestAnimationFrame(() => Charts.sparkline(spark, row.sparkline));
      return tr;
    }));
    document.getElementById("board-empty").hidden = data.rows.length > 0;
    document.getElementById("board-count").textContent =
      `${data.rows.length} of ${data.total} IPs, last ${windowLabel(Number(s.hours))}${s.q ? `, filtered by “${s.q}”` : ""}` +
      (data.left_out ? `; ${data.left_out} more left out: ${data.left_out_why}` : "");
  }

  try {
    info = await meta();
    bySelect.replaceChildren(...info.measures.map(m => el("option", {value: m.key}, m.label)));
    const windows = [...new Set([...info.windows, Number(state().hours)])].sort((a, b) => a - b);
    hoursSelect.replaceChildren(...windows.map(h => el("option", {value: h}, `last ${windowLabel(h)}`)));
    bySelect.addEventListener("change", () => load({by: bySelect.value}).catch(showError));
    hoursSelect.addEventListener("change", () => load({hours: hoursSelect.value}).catch(showError));
    let typing = null;
    filter.addEventListener("input", () => {
      clearTimeout(typing);
      typing = setTimeout(() => load({q: filter.value}).catch(showError), 200);
    });
    document.getElementById("controls").addEventListener("submit", (e) => { e.preventDefault(); load({q: filter.value}).catch(showError); });
    await load();
    document.body.dataset.ready = "1";
  } catch (error) { showError(error); }
})();
