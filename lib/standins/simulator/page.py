"""The simulator's search page: rendered in the browser by its own script, like jp.mercari.com.

The script reads the URL's parameters, POSTs the search to the JSON API and
renders a virtual list: only the cells near the viewport exist in the DOM
(about 20 at a time), skeleton cells without links stand in until data
arrives, and scrolling swaps cells in and out. The markup follows the real
site's test ids (see lib/crawler/selectors.py).
"""

SEARCH_PAGE = r"""<!DOCTYPE html>
<html lang="ja"><head><meta charset="utf-8"><title>%(keyword)s の検索結果 - メルカリ</title>
<style>
 body { margin: 0; font-family: sans-serif; }
 #grid { list-style: none; margin: 0; padding: 0; position: relative; }
 li[data-testid="item-cell"] { height: 96px; box-sizing: border-box; border-bottom: 1px solid #eee;
   position: absolute; left: 0; right: 0; }
 .thumb { width: 80px; height: 80px; background: #ddd; display: inline-block; }
 #scrim { position: fixed; inset: 0; background: rgba(0,0,0,.4); }
</style></head>
<body>
<header style="height:64px">メルカリ</header>
<main><div id="status"></div><ul id="grid"></ul></main>
%(scrim)s
<script>
(function () {
  const CELL = 96, WINDOW = 20, PAGE_SIZE = 120;
  const params = new URLSearchParams(location.search);
  const status = (params.get("status") || "on_sale").split("|");
  const body = {
    pageSize: PAGE_SIZE,
    pageToken: params.get("page_token") || "",
    searchCondition: {
      keyword: params.get("keyword") || "",
      status: status.map(s => "STATUS_" + s.toUpperCase()),
      sort: "SORT_" + (params.get("sort") || "created_time").toUpperCase(),
      order: "ORDER_" + (params.get("order") || "desc").toUpperCase(),
    },
  };
  const grid = document.getElementById("grid");
  function skeletons() {
    for (let i = 0; i < 8; i++) {
      const li = document.createElement("li");
      li.setAttribute("data-testid", "item-cell");
      li.style.top = (i * CELL) + "px";
      li.innerHTML = '<div class="thumb"></div>';
      grid.appendChild(li);
    }
  }
  function yen(n) { return Number(n).toLocaleString("en-US"); }
  function cell(item, index) {
    const li = document.createElement("li");
    li.setAttribute("data-testid", "item-cell");
    li.setAttribute("data-index", index);
    li.style.top = (index * CELL) + "px";
    const sold = item.status !== "ITEM_STATUS_ON_SALE";
    const href = item.itemType === "ITEM_TYPE_BEYOND" ? "/shops/product/" + item.id : "/item/" + item.id;
    const priced = item.price !== undefined && item.price !== "";
    const label = item.name + "の画像" + (sold ? " 売り切れ" : "") + (priced ? " " + yen(item.price) + "円" : "");
    if (item._malformed === "no-link") {
      li.innerHTML = '<div class="thumb"></div><span>' + item.name + '</span>';
      return li;
    }
    li.innerHTML =
      '<a data-testid="thumbnail-link" href="' + href + '">' +
      '<div role="img" aria-label="' + label.replace(/"/g, "&quot;") + '">' +
      '<img class="thumb" alt="" src="' + (item.thumbnails[0] || "") + '">' +
      (item._malformed === "no-name" ? "" : '<span data-testid="thumbnail-item-name"></span>') +
      (priced && item._malformed !== "no-price" ? '<span class="merPrice"><span class="currency">¥</span><span class="number">' + yen(item.price) + '</span></span>' : '') +
      (sold ? '<div data-testid="thumbnail-sticker" aria-label="売り切れ"></div>' : '') +
      '</div></a>';
    const name = li.querySelector('[data-testid="thumbnail-item-name"]');
    if (name) name.textContent = item.name;
    return li;
  }
  function render(items) {
    const first = Math.max(0, Math.floor(window.scrollY / CELL) - 4);
    const last = Math.min(items.length, first + WINDOW);
    grid.innerHTML = "";
    for (let i = first; i < last; i++) grid.appendChild(cell(items[i], i));
  }
  skeletons();
  fetch("%(api_path)s", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) })
    .then(r => r.json())
    .then(data => {
      const items = data.items || [];
      window.__numFound = Number((data.meta || {}).numFound || 0);
      grid.innerHTML = "";
      if (!items.length) {
        if (window.__numFound === 0) document.getElementById("status").textContent = "出品された商品がありません";
        return;
      }
      grid.style.height = (items.length * CELL) + "px";
      render(items);
      let queued = false;
      window.addEventListener("scroll", () => {
        if (queued) return;
        queued = true;
        requestAnimationFrame(() => { queued = false; render(items); });
      });
    });
})();
</script></body></html>
"""

SCRIM = '<div data-testid="merModalBaseScrim" id="scrim" onclick="this.remove()"></div>'

CLOUDFLARE_403 = """<!DOCTYPE html><html><head><title>Attention Required! | Cloudflare</title></head>
<body><h1>Sorry, you have been blocked</h1><p>You are unable to access mercari.com</p></body></html>"""

CLOUDFLARE_CHALLENGE = """<!DOCTYPE html><html><head><title>Just a moment...</title></head>
<body><h1>jp.mercari.com</h1><p>Checking if the site connection is secure</p></body></html>"""

CAPTCHA = """<!DOCTYPE html><html><head><title>メルカリ</title></head>
<body><h1>Verify you are human</h1><div class="cf-turnstile"></div></body></html>"""

TOO_MANY = """<!DOCTYPE html><html><head><title>429 Too Many Requests</title></head>
<body><h1>Too Many Requests</h1></body></html>"""
