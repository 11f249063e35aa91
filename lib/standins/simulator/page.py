"""The simulator's search page: rendered in the browser by its own script, like jp.mercari.com.

What it does, because the real page does it (and nothing more: no helper global, no hook a crawler could
lean on that the real site lacks):

- the raw HTML is a shell; the script POSTs the search to the JSON API with the headers the real page's
  script sends (a DPoP proof and ``X-Platform: web``), so only the page can fetch it;
- the API's numbers are strings (``numFound``, ``price``, ``created``); sold searches list
  ``ITEM_STATUS_SOLD_OUT`` and ``ITEM_STATUS_TRADING``; a listing without a price carries a flag and the
  placeholder price ¥9,999,999;
- skeleton cells (no link) stand in until the data arrives, and stay there when the API answers nothing;
- the list is virtual (about 20 cells live in the DOM at a time) and lazy: only the first part of a page's
  items renders until a sentinel near the bottom of the list scrolls into view;
- a page holds the API's items, a few short of 120 while it has a next page (the site drops the listings it
  filters: lib/standins/simulator/market.py);
- ``a[data-testid="pagination-next-button"]`` exists only when there is a next page;
- the no-results text is in the raw HTML, inside a ``<template>``, shown only when there are no results.
The markup follows the real site's test ids (lib/crawling/selectors.py).
"""

#: The proof the real page's script sends with each API request: the shape of a signed JWT (the signature is not
#: checked), naming the request's method and URL.
DPOP = r"""  function b64url(text) {
    return btoa(unescape(encodeURIComponent(text))).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
  }
  function dpop(method, url) {
    const random = () => Math.random().toString(36).slice(2);
    return b64url(JSON.stringify({typ: "dpop+jwt", alg: "ES256", jwk: {crv: "P-256", kty: "EC", x: random(), y: random()}}))
      + "." + b64url(JSON.stringify({iat: Math.floor(Date.now() / 1000), jti: random() + random(), htu: url, htm: method,
                                     uuid: random()}))
      + "." + b64url(random() + random() + random());
  }"""

SEARCH_PAGE = r"""<!DOCTYPE html>
<html lang="ja"><head><meta charset="utf-8"><title>%(keyword)s の検索結果 - メルカリ</title>
<style>
 body { margin: 0; font-family: sans-serif; }
 #list { position: relative; }
 #grid { list-style: none; margin: 0; padding: 0; position: relative; }
 #sentinel { position: absolute; left: 0; right: 0; height: 1px; }
 li[data-testid="item-cell"] { height: 96px; box-sizing: border-box; border-bottom: 1px solid #eee;
   position: absolute; left: 0; right: 0; }
 .thumb { width: 80px; height: 80px; background: #ddd; display: inline-block; }
 #scrim { position: fixed; inset: 0; background: rgba(0,0,0,.4); }
 nav { height: 48px; }
</style></head>
<body>
<header style="height:64px">メルカリ</header>
<main>
<div id="search-result"></div>
<div id="list"><ul id="grid"></ul><div id="sentinel"></div></div>
<nav id="pagination"></nav>
<template id="no-results"><p data-testid="search-no-results">出品された商品がありません</p></template>
</main>
%(scrim)s
<script id="search-config" type="application/json">%(config)s</script>
<script>
(function () {
  const CELL = 96, WINDOW = 20, FIRST_BATCH = 60, LAZY_MS = 250, PAGE_SIZE = 120;
  const config = JSON.parse(document.getElementById("search-config").textContent);
  const params = new URLSearchParams(location.search);
  const status = (params.get("status") || "on_sale").split("|");
  const body = {
    pageSize: PAGE_SIZE,
    pageToken: params.get("page_token") || "",
    searchSessionId: Math.random().toString(16).slice(2),
    searchCondition: {
      keyword: params.get("keyword") || "",
      status: status.map(s => "STATUS_" + s.toUpperCase()),
      sort: "SORT_" + (params.get("sort") || "created_time").toUpperCase(),
      order: "ORDER_" + (params.get("order") || "desc").toUpperCase(),
    },
  };
/*DPOP*/
  const grid = document.getElementById("grid");
  const sentinel = document.getElementById("sentinel");
  for (let i = 0; i < 8; i++) {  // skeletons until the data arrives
    const li = document.createElement("li");
    li.setAttribute("data-testid", "item-cell");
    li.style.top = (i * CELL) + "px";
    li.innerHTML = '<div class="thumb"></div>';
    grid.appendChild(li);
  }
  grid.style.height = (8 * CELL) + "px";
  function yen(n) { return Number(n).toLocaleString("en-US"); }
  function malformed(index) { return config.malformed && index %% 10 === 3 ? ["no-link", "no-name", "no-price"][Math.floor(index / 10) %% 3] : ""; }
  function cell(item, index) {
    const li = document.createElement("li");
    li.setAttribute("data-testid", "item-cell");
    li.style.top = (index * CELL) + "px";
    const sold = item.status !== "ITEM_STATUS_ON_SALE";
    const href = item.itemType === "ITEM_TYPE_BEYOND" ? "/shops/product/" + item.id : "/item/" + item.id;
    const label = item.name + "の画像" + (sold ? " 売り切れ" : "") + " " + yen(item.price) + "円";
    const broken = malformed(index);
    if (broken === "no-link") {
      li.innerHTML = '<div class="thumb"></div><span>' + item.name + '</span>';
      return li;
    }
    li.innerHTML =
      '<a data-testid="thumbnail-link" href="' + href + '">' +
      '<div role="img" aria-label="' + label.replace(/"/g, "&quot;") + '">' +
      '<img class="thumb" alt="" src="' + (item.thumbnails[0] || "") + '">' +
      (broken === "no-name" ? "" : '<span data-testid="thumbnail-item-name"></span>') +
      (broken === "no-price" || config.priceless ? "" : '<span class="merPrice"><span class="currency">¥</span><span class="number">' + yen(item.price) + '</span></span>') +
      (sold ? '<div data-testid="thumbnail-sticker" aria-label="売り切れ"></div>' : '') +
      '</div></a>';
    const name = li.querySelector('[data-testid="thumbnail-item-name"]');
    if (name) name.textContent = item.name;
    return li;
  }
  let items = [], shown = 0;
  function render() {
    const first = Math.max(0, Math.floor(window.scrollY / CELL) - 4);
    const last = Math.min(shown, first + WINDOW);
    grid.innerHTML = "";
    for (let i = first; i < last; i++) grid.appendChild(cell(items[i], i));
  }
  function layout() {
    grid.style.height = (shown * CELL) + "px";
    sentinel.style.top = (Math.max(0, shown - 3) * CELL) + "px";
  }
  function pagination(meta) {
    const nav = document.getElementById("pagination");
    const link = (token, testid, text) => {
      const a = document.createElement("a");
      const p = new URLSearchParams(location.search);
      if (token) p.set("page_token", token); else p.delete("page_token");
      a.href = "/search?" + p.toString();
      a.setAttribute("data-testid", testid);
      a.textContent = text;
      nav.appendChild(a);
    };
    const page = Number((body.pageToken.split(":")[1]) || 0);
    if (page > 0) link(page > 1 ? "v1:" + (page - 1) : "", "pagination-prev-button", "前へ");
    if (meta.nextPageToken) link(meta.nextPageToken, "pagination-next-button", "次へ");
  }
  fetch(config.api, {method: "POST", body: JSON.stringify(body),
                     headers: {"Content-Type": "application/json", "X-Platform": "web",
                               "DPoP": dpop("POST", location.origin + config.api.split("?")[0])}})
    .then(r => r.json())
    .then(data => {
      const meta = data.meta || {};
      items = data.items || [];
      if (!items.length) {
        if (meta.numFound === "0") {
          grid.innerHTML = "";
          grid.style.height = "0px";
          document.getElementById("search-result").appendChild(
            document.getElementById("no-results").content.cloneNode(true));
        }
        return;  // anything else (a soft block): the skeletons stay
      }
      // a page cut short (mode ``cut_short``) stops rendering after ``config.cut`` items: its lazy load never comes
      const limit = config.cut ? Math.min(items.length, config.cut) : items.length;
      shown = Math.min(limit, FIRST_BATCH);
      layout();
      render();
      pagination(meta);
      let queued = false, loading = false;
      window.addEventListener("scroll", () => {
        if (queued) return;
        queued = true;
        requestAnimationFrame(() => { queued = false; render(); });
      });
      const observer = new IntersectionObserver(entries => {
        if (!entries.some(e => e.isIntersecting) || loading || shown >= limit) return;
        loading = true;
        setTimeout(() => {
          shown = limit;
          layout();
          render();
          loading = false;
          observer.disconnect();
        }, LAZY_MS);
      });
      observer.observe(sentinel);
    });
})();
</script></body></html>
"""

SEARCH_PAGE = SEARCH_PAGE.replace("/*DPOP*/", DPOP)

#: A listing's page (``/item/<id>``): a shell whose script GETs the item API (``/items/get?id=…``, with the same
#: headers as the search's) and shows the listing, its status, or that it was deleted.
ITEM_PAGE = r"""<!DOCTYPE html>
<html lang="ja"><head><meta charset="utf-8"><title>メルカリ</title></head>
<body><main id="item"></main>
<script>
(function () {
/*DPOP*/
  const id = location.pathname.split("/").pop();
  const api = "/items/get?id=" + encodeURIComponent(id);
  const main = document.getElementById("item");
  fetch(api, {headers: {"X-Platform": "web", "DPoP": dpop("GET", location.origin + api)}})
    .then(r => r.json())
    .then(data => {
      if (data.result !== "OK") { main.textContent = "該当する商品は削除されています。"; return; }
      document.title = data.data.name + " - メルカリ";
      main.textContent = data.data.name + (data.data.status === "on_sale" ? "" : " 売り切れました");
    });
})();
</script></body></html>
""".replace("/*DPOP*/", DPOP)

SCRIM = '<div data-testid="merModalBaseScrim" id="scrim" onclick="this.remove()"></div>'

CLOUDFLARE_403 = """<!DOCTYPE html><html><head><title>Attention Required! | Cloudflare</title></head>
<body><h1>Sorry, you have been blocked</h1><p>You are unable to access mercari.com</p></body></html>"""

CLOUDFLARE_CHALLENGE = """<!DOCTYPE html><html><head><title>Just a moment...</title></head>
<body><h1>jp.mercari.com</h1><p>Checking if the site connection is secure</p></body></html>"""

CAPTCHA = """<!DOCTYPE html><html><head><title>メルカリ</title></head>
<body><h1>Verify you are human</h1><div class="cf-turnstile"></div></body></html>"""

TOO_MANY = """<!DOCTYPE html><html><head><title>429 Too Many Requests</title></head>
<body><h1>Too Many Requests</h1></body></html>"""
