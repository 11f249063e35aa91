"""Chromium, and a Japanese font for the pages it renders, where missing: Debian's packages, installed when
running as root."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from collections.abc import Callable

from lib.crawling.driver import DriverError, find_chromium


def ensure_chromium(configured: str | None = None) -> str:
    """The Chromium binary, installing Debian's ``chromium`` package first if there is none (root only)."""
    try:
        return find_chromium(configured)
    except DriverError:
        if configured or not can_install():
            raise
    stderr = apt_install("chromium", lambda: _found_chromium())
    try:
        return find_chromium(None)
    except DriverError:
        raise DriverError(f"installing Chromium failed: {stderr[-500:]}") from None


def _found_chromium() -> bool:
    try:
        find_chromium(None)
        return True
    except DriverError:
        return False


def has_cjk_font() -> bool:
    """Whether fontconfig knows a font with Japanese glyphs (without one, Chromium draws boxes)."""
    found = subprocess.run(["fc-list", ":lang=ja", "family"], capture_output=True, text=True, check=False)
    return bool(found.stdout.strip())


def ensure_cjk_font() -> bool:
    """A Japanese font for pages Chromium renders (the dashboard's browser tests): Debian's
    ``fonts-ipafont-gothic`` (small) where none is installed and we are root. Whether one is there now."""
    if has_cjk_font():
        return True
    if not can_install():
        return False
    apt_install("fonts-ipafont-gothic", has_cjk_font)
    return has_cjk_font()


def can_install() -> bool:
    return os.geteuid() == 0 and shutil.which("apt-get") is not None


def apt_install(package: str, present: Callable[[], bool]) -> str:
    """Install a Debian package unless ``present()`` turns true while waiting for another installer; apt-get's
    error output ('' on success)."""
    # one installer at a time (two demos, two test workers): apt-get fails on a held dpkg lock
    with open("/tmp/animetop-apt-install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if present():  # installed while we waited
            return ""
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=False, capture_output=True, env=env)
        result = subprocess.run(["apt-get", "install", "-y", "-qq", package], capture_output=True, text=True,
                                env=env)
    return result.stderr.strip() if result.returncode else ""
