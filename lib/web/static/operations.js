"use strict";
(async () => {
  const {el, api, meta, setCsrf, showError, time} = Animetop;
  const dialog = document.getElementById("confirm");
  let info;

  async function status() {
    const s = await api("/api/v1/status");
    document.getElementById("cards").replaceChildren(
      ...[["IPs scheduled", s.scheduled_ips], ["Crawls in flight", s.in_flight.length], ["Dead letters", s.dead_letters]]
        .map(([label, v]) => el("div", {class: "card"}, el("b", {}, v), label)));
    drift(s.crawler_drift);
    document.querySelector("#budgets tbody").replaceChildren(...s.crawl_budgets.map(b => el("tr", {},
      el("td", {}, b.address), el("td", {class: "num"}, b.loads_last_minute), el("td", {class: "num"}, b.limit),
      el("td", {class: "num"}, b.budget), el("td", {}, b.cut_at === null ? "–" : time(b.cut_at)),
      el("td", {}, b.full_at === null ? "–" : time(b.full_at)))));
    document.getElementById("budgets-empty").hidden = s.crawl_budgets.length > 0;
    crawlPlan(s.crawl_plan);
    document.querySelector("#queues tbody").replaceChildren(...s.queues.map(q => el("tr", {},
      el("td", {}, q.queue), el("td", {class: "num"}, q.ready), el("td", {class: "num"}, q.running ?? "–"),
      el("td", {class: "num"}, q.delayed), el("td", {class: "num"}, q.dead))));
  }

  function crawlPlan(p) {
    const box = document.getElementById("crawl-plan");
    box.hidden = !p;
    if (!p) return;
    const n = x => Math.round(x).toLocaleString("en");
    box.textContent = `Planned: ${n(p.planned)} of ${n(p.budget)} requests an hour for ${p.ips} IPs; ` +
      (p.price > 0 ? `${p.lengthened} of them crawled less often than their own interval to stay within it` :
                     "every IP at its own interval") +
      (p.over ? " (over: even the longest intervals spend more; the rate limit holds the rest)" : "") +
      `, as of ${time(p.at)}.` +
      (p.reached === null ? "" : ` The last crawls' on-sale pages reached ${(100 * p.reached).toFixed(1)} % of the ` +
                                 "new listings since the crawl before (the rest is estimated).") +
      (p.deepened ? ` ${p.deepened} IP(s) outrun their sold pages` + (p.sold_pages ?
        `: read ${p.sold_pages} pages deep with the requests to spare.` : ".") : "");
  }

  function drift(d) {
    const box = document.getElementById("drift");
    if (!d || !d.crawls) { box.replaceChildren(el("p", {class: "muted"}, "No crawl recorded yet.")); return; }
    const sources = Object.entries(d.pages_by_source).map(([k, v]) => `${v} from ${k === "api" ? "the search API" : "the page (DOM)"}`);
    const anomalies = Object.entries(d.anomalies);
    box.replaceChildren(
      el("p", {class: d.alert.length ? "alert-on" : "alert-off", role: d.alert.length ? "alert" : null},
         d.alert.length ? `ALERT crawler drift: ${d.alert.join(", ")}` : "No drift alert."),
      el("p", {}, `Last ${d.crawls} crawls: pages ${sources.join(", ") || "none"}; full pages filled `,
         d.mean_fill === null ? "–" : `${Math.round(d.mean_fill * 100)}%`, "."),
      el("p", {}, "Anomalies: ", anomalies.length ? anomalies.map(([k, v]) => `${k} × ${v}`).join(", ") : "none"));
  }

  async function letters() {
    const rows = await api("/api/v1/deadletters");
    document.querySelector("#letters tbody").replaceChildren(...rows.map(d => el("tr", {"data-id": d.id},
      el("td", {}, info.operator ? el("input", {type: "checkbox", class: "pick", value: d.id,
                                                "aria-label": `select ${d.actor} ${d.id}`}) : ""),
      el("td", {}, time(d.dead_at)), el("td", {}, d.queue), el("td", {}, d.actor),
      el("td", {class: "num"}, d.retries), el("td", {class: "name"}, (d.reason || "").split("\n")[0]))));
    document.getElementById("letters-empty").hidden = rows.length > 0;
  }

  function controls() {
    document.getElementById("readonly").hidden = info.operator_enabled;
    document.getElementById("signin").hidden = !info.operator_enabled || info.operator;
    document.getElementById("letter-actions").hidden = !info.operator;
  }

  // Ask the server what an action would affect (a dry run), show it, and act only on confirmation.
  async function act(action, selection) {
    const preview = await api(`/api/v1/deadletters/${action}`, {method: "POST", body: {...selection, dry_run: true}});
    document.getElementById("confirm-title").textContent =
      `${action === "purge" ? "Purge" : "Requeue"} ${preview.count} dead letter${preview.count === 1 ? "" : "s"}?`;
    document.getElementById("confirm-summary").textContent = action === "purge"
      ? "They will be deleted for good." : "They will be sent back to their queues as if never tried.";
    document.getElementById("confirm-list").replaceChildren(...preview.letters.slice(0, 50).map(d =>
      el("li", {}, `${d.actor} on ${d.queue}: ${(d.reason || "").split("\n")[0]}`)),
      preview.count > 50 ? el("li", {}, `… and ${preview.count - 50} more`) : null);
    document.getElementById("confirm-ok").disabled = preview.count === 0;
    dialog.returnValue = "";
    dialog.showModal();
    await new Promise(resolve => dialog.addEventListener("close", resolve, {once: true}));
    if (dialog.returnValue !== "ok") return;
    const ids = selection.all ? undefined : preview.letters.map(d => d.id);
    await api(`/api/v1/deadletters/${action}`, {method: "POST", body: selection.all ? {all: true} : {ids}});
    await Promise.all([letters(), status()]);
  }
  function picked() { return [...document.querySelectorAll("input.pick:checked")].map(i => i.value); }

  try {
    info = await meta();
    controls();
    document.getElementById("signin-form").addEventListener("submit", async (e) => {
      e.preventDefault();
      try {
        const session = await api("/api/v1/session", {method: "POST", body: {token: document.getElementById("token").value}});
        setCsrf(session.csrf_token);
        info = await meta();
        controls();
        await letters();
      } catch (error) { showError(error); }
    });
    document.getElementById("signout").addEventListener("click", async () => {
      await api("/api/v1/session", {method: "DELETE"});
      info = await meta(); controls(); await letters();
    });
    for (const [id, action, all] of [["requeue-selected", "requeue", false], ["purge-selected", "purge", false],
                                     ["requeue-all", "requeue", true], ["purge-all", "purge", true]]) {
      document.getElementById(id).addEventListener("click", () =>
        act(action, all ? {all: true} : {ids: picked()}).catch(showError));
    }
    await Promise.all([status(), letters()]);
    document.body.dataset.ready = "1";
  } catch (error) { showError(error); }
})();
