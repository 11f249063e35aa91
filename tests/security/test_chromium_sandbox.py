"""Chromium runs sandboxed unless CHROMIUM_NO_SANDBOX is on, checked on real Chromium processes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lib.core.settings import load_settings

from ..helpers import ForwardProxy, descendants, run_cli

ROOT = Path(__file__).resolve().parents[2]


def test_the_launch_arguments_turn_the_sandbox_off_only_when_asked_and_never_carry_proxy_credentials():
    from lib.crawling.driver import chromium_args, proxy_credentials

    assert "--no-sandbox" not in chromium_args(no_sandbox=False)
    assert "--no-sandbox" in chromium_args(no_sandbox=True)
    assert not any("sandbox" in a for a in chromium_args(no_sandbox=False, proxy="http://127.0.0.1:3128"))
    args = chromium_args(no_sandbox=False, proxy="http://puser:p%40ss@proxy.internal:3128")
    assert "--proxy-server=http://proxy.internal:3128" in args and not any("puser" in a or "p%40ss" in a for a in args)
    assert proxy_credentials("http://puser:p%40ss@proxy.internal:3128") == ("puser", "p@ss")
    assert proxy_credentials("socks5://token@proxy.internal:1080") == ("token", "")
    assert proxy_credentials("http://proxy.internal:3128") is None
    assert load_settings({}).chromium_no_sandbox is False            # sandboxed by default


def _process(pid: int) -> dict:
    """What /proc says about a process: its command line, seccomp mode and user namespace."""
    status = Path(f"/proc/{pid}/status").read_text()
    return {"cmdline": Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"),
            "seccomp": next(line.split()[1] for line in status.splitlines() if line.startswith("Seccomp:")),
            "userns": os.readlink(f"/proc/{pid}/ns/user")}


def chromium_processes(browser_pid: int) -> tuple[dict, list[dict]]:
    """The browser process and its renderers."""
    renderers = []
    for pid in descendants(browser_pid):
        try:
            info = _process(pid)
        except OSError:
            continue
        if "--type=renderer" in info["cmdline"]:
            renderers.append(info)
    return _process(browser_pid), renderers


@pytest.mark.skipif(os.geteuid() != 0, reason="Chromium refuses its sandbox only as root")
def test_as_root_without_the_setting_start_up_fails_clearly_naming_it(chromium, env):
    import asyncio

    from lib.crawling.driver import Browser, DriverError

    # What Chromium itself does as root with its sandbox on: refuse, with a message that names no setting of ours.
    raw = subprocess.run([chromium, "--headless", "--disable-gpu", "--dump-dom", "about:blank"],
                         capture_output=True, text=True, timeout=60)
    assert "Running as root without --no-sandbox is not supported" in raw.stderr
    with pytest.raises(DriverError) as e:
        asyncio.run(Browser.launch(chromium, no_sandbox=False))
    assert "CHROMIUM_NO_SANDBOX=true" in str(e.value) and "unprivileged user" in str(e.value)
    run = run_cli({**env, "CHROMIUM_PATH": chromium}, "run", "crawler")        # the crawler process type
    assert run.returncode == 2  # at once: run_cli's bound would fail the test if it kept retrying
    assert "CHROMIUM_NO_SANDBOX=true" in run.stderr and "Traceback" not in run.stderr


SANDBOXED_SCRIPT = r"""
import asyncio, json, sys
from lib.crawling.driver import Browser

async def main():
    browser = await Browser.launch(sys.argv[1], no_sandbox=False)
    try:
        tab = await browser.new_tab("^$", block_resources=True)
        nav = await tab.goto("data:text/html,<p>inside the sandbox</p>", 30)
        print(json.dumps({"pid": browser.pid, "text": nav.text}), flush=True)
        sys.stdin.readline()                     # the test reads /proc meanwhile
    finally:
        await browser.close()

asyncio.run(main())
"""


def test_as_an_unprivileged_user_chromium_runs_sandboxed(chromium):
    """The default (CHROMIUM_NO_SANDBOX off), for real: the crawler's driver as user nobody launches Chromium
    without --no-sandbox, and its renderers run under seccomp-bpf in their own user namespace."""
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running Chromium as an unprivileged user needs setpriv")
        # The venv's interpreter may sit under /root; the system one with the venv's packages is readable.
        python = shutil.which("python3", path="/usr/bin:/usr/local/bin")
        if python is None or subprocess.run([python, "-c", "import sys; print(sys.version_info[:2])"],
                                            capture_output=True, text=True).stdout.strip() != str(sys.version_info[:2]):
            pytest.skip("no system Python of this version to run as an unprivileged user")
        command = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", python]
    else:
        command = [sys.executable]
    site = next(p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir())
    env = {"PATH": os.environ.get("PATH", ""), "HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1",
           "PYTHONPATH": f"{ROOT}{os.pathsep}{site}"}
    child = subprocess.Popen([*command, "-c", SANDBOXED_SCRIPT, chromium], cwd="/tmp", env=env, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = child.stdout.readline()
        if not line:
            error = child.stderr.read()
            if "No usable sandbox" in error or "namespace" in error.lower():
                pytest.skip(f"this machine gives Chromium no sandbox: {error.strip()[-300:]}")
            raise AssertionError(f"the sandboxed Chromium did not start:\n{error[-3000:]}")
        started = json.loads(line)
        browser, renderers = chromium_processes(started["pid"])
        assert started["text"] == "inside the sandbox"
        assert "--no-sandbox" not in browser["cmdline"]
        assert renderers, "no renderer process found"
        for renderer in renderers:
            assert "--no-sandbox" not in renderer["cmdline"]
            assert renderer["seccomp"] == "2", renderer                 # seccomp-bpf filter on
            assert renderer["userns"] != browser["userns"], renderer    # namespace sandbox
    finally:
        child.stdin.write("\n")
        child.stdin.close()
        child.wait(timeout=60)


def test_with_the_setting_on_chromium_runs_unsandboxed_and_proxy_credentials_go_over_cdp(chromium, creds, caplog):
    """CHROMIUM_NO_SANDBOX on, as the crawler runs it: --no-sandbox on the command line, renderers without
    seccomp in the browser's namespace. Through an authenticating proxy, the password is in neither the
    command line (readable by every local user) nor the logs, and still reaches the proxy."""
    import asyncio

    from lib.crawling.browsers import BrowserManager
    from lib.crawling.driver import Browser
    from lib.crawling.page_fetch import fetch_page, search_url
    from lib.standins.simulator import MarketSimulator

    if os.geteuid() != 0:
        pytest.skip("as root only: an unprivileged run is covered by the sandboxed test")
    sim = MarketSimulator(speed=0).start()
    proxy = ForwardProxy("puser", creds.proxy_pw)
    good = f"http://puser:{creds.proxy_pw}@127.0.0.1:{proxy.port}"
    wrong = f"http://puser:{creds.api_pw}@127.0.0.1:{proxy.port}"

    async def crawl_through(proxy_url: str):
        manager = BrowserManager(lambda p: Browser.launch(chromium, no_sandbox=True, proxy=p),
                                 api_pattern=r"/v2/entities:search", block_resources=True, max_pages=1,
                                 max_crawls=10, proxy=proxy_url)
        try:
            async with manager.tab() as tab:
                seen = chromium_processes(manager._current.browser.pid)
                try:
                    page = await fetch_page(tab, search_url(sim.url, "鬼滅の刃", "on_sale", 1), sim.url, timeout=20,
                                            first_page=False)
                except Exception as e:  # noqa: BLE001 - the wrong password's failure is the point
                    page = e
                return page, seen, chromium_processes(manager._current.browser.pid)
        finally:
            await manager.close()

    try:
        with caplog.at_level("INFO"):
            page, (browser, _), (_, renderers) = asyncio.run(crawl_through(good))
            failed, _, _ = asyncio.run(crawl_through(wrong))
    finally:
        proxy.stop()
        sim.stop()
    assert not isinstance(page, Exception) and len(page.items) > 0, page
    assert proxy.challenged >= 1 and proxy.requests >= 2               # 407 answered over CDP, then through
    assert isinstance(failed, Exception)                                # a wrong password fails, not loops
    assert "--no-sandbox" in browser["cmdline"]
    assert f"--proxy-server=http://127.0.0.1:{proxy.port}" in browser["cmdline"]
    assert renderers and all(r["seccomp"] == "0" and r["userns"] == browser["userns"] for r in renderers)
    assert f"proxy http://puser:***@127.0.0.1:{proxy.port}" in caplog.text
    creds.assert_absent(browser["cmdline"], *(r["cmdline"] for r in renderers), caplog.text,
                        "\n".join(r.getMessage() for r in caplog.records))
