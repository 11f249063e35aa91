"""A page in real headless Chromium (pyppeteer) that records console errors and uncaught exceptions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lib.crawling.driver import Browser

#: Pixels of a canvas that are drawn (not transparent), for "the chart is not empty".
DRAWN_PIXELS = """(selector) => Array.from(document.querySelectorAll(selector + ' canvas')).map(c => {
  const data = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let drawn = 0;
  for (let i = 3; i < data.length; i += 4) if (data[i] > 0) drawn++;
  return drawn;
}).reduce((a, b) => a + b, 0)"""


@dataclass
class Page:
    page: Any
    errors: list[str] = field(default_factory=list)

    async def open(self, url: str) -> None:
        await self.page.goto(url, waitUntil="domcontentloaded", timeout=20_000)
        await self.ready()

    async def ready(self) -> None:
        await self.page.waitForFunction("() => document.body.dataset.ready === '1' || "
                                        "!document.getElementById('error').hidden", {"timeout": 20_000})
        shown = await self.page.evaluate("() => document.getElementById('error').hidden ? '' : "
                                         "document.getElementById('error').textContent")
        assert not shown, shown

    async def js(self, script: str, *args: Any) -> Any:
        return await self.page.evaluate(script, *args)

    async def wait(self, predicate: str, *args: Any) -> None:
        await self.page.waitForFunction(predicate, {"timeout": 15_000, "polling": 50}, *args)

    async def drawn(self, selector: str) -> int:
        return int(await self.js(DRAWN_PIXELS, selector))


async def launch(chromium: str) -> Browser:
    """The crawler's Chromium, started within its launch timeout (``lib.crawling.driver``)."""
    return await Browser.launch(chromium, no_sandbox=True)


async def new_page(browser: Browser, width: int = 1280, height: int = 900) -> Page:
    page = await browser.bare_page()
    await page.setViewport({"width": width, "height": height})
    wrapped = Page(page)
    page.on("console", lambda msg: wrapped.errors.append(f"console: {msg.text}") if msg.type == "error" else None)
    page.on("pageerror", lambda error: wrapped.errors.append(f"page error: {error}"))
    page.on("dialog", lambda dialog: wrapped.errors.append(f"dialog opened: {dialog.message}"))
    return wrapped


async def rows_of(page: Page) -> list[list[str]]:
    """The leaderboard page's rows: each IP's id, then the text of its number cells."""
    return await page.js("""() => Array.from(document.querySelectorAll('#board tbody tr'))
        .map(tr => [tr.dataset.ipId, ...Array.from(tr.querySelectorAll('td.num')).map(td => td.textContent)])""")
