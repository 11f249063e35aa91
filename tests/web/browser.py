"""A page in real headless Chromium (pyppeteer) that records console errors and uncaught exceptions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyppeteer

from lib.crawling.driver import chromium_args

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


async def launch(chromium: str):
    return await pyppeteer.launch(executablePath=chromium, headless=True, args=chromium_args(no_sandbox=True),
                                  handleSIGINT=False, handleSIGTERM=False, handleSIGHUP=False)


async def new_page(browser, width: int = 1280, height: int = 900) -> Page:
    page = await browser.newPage()
    await page.setViewport({"width": width, "height": height})
    wrapped = Page(page)
    page.on("console", lambda msg: wrapped.errors.append(f"console: {msg.text}") if msg.type == "error" else None)
    page.on("pageerror", lambda error: wrapped.errors.append(f"page error: {error}"))
    page.on("dialog", lambda dialog: wrapped.errors.append(f"dialog opened: {dialog.message}"))
    return wrapped
