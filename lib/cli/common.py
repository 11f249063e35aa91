"""What every command shares: the command registry and the app's pieces, imported late (a command that
needs no broker starts quickly and never touches Redis)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {}


def command(name: str):
    def register(fn):
        COMMANDS[name] = fn
        return fn
    return register


def app_broker():
    """Import the actors (which configures this process) and return the broker."""
    import actors

    return actors.broker


def app_settings():
    """The settings, with this process on the app's clock (``CLOCK_SPEED``/``CLOCK_ANCHOR``), as every process
    type is: an IP added from the command line is due at the app's now, not the wall clock's."""
    from lib.core.clock import Clock, set_clock
    from lib.core.settings import settings_or_exit

    settings = settings_or_exit()
    set_clock(Clock(settings.clock_speed, settings.clock_anchor))
    return settings


def app_catalogue():
    from lib.core.db import bind_database
    from lib.core.redis_client import state_redis
    from lib.scheduling.catalogue import Catalogue
    from lib.scheduling.schedule import ScheduleStore

    settings = app_settings()
    bind_database(settings.database_url_resolved)
    return Catalogue(ScheduleStore(state_redis(settings)), settings)


def app_database():
    """The settings' database bound (no Redis: a command that only reads and writes tables needs none)."""
    from lib.core.db import bind_database

    return bind_database(app_settings().database_url_resolved)


def parse_ip_id(value: str | None) -> int:
    """An IP id given on the command line; one no row can have (below 1, past ``MAX_AUTO_ID``) is refused here,
    before it reaches the database (SQLite cannot even bind an integer past 64 bits)."""
    from lib.scheduling.catalogue import CatalogueError
    from models.base import MAX_AUTO_ID

    try:
        ip_id = int(value or "")
    except ValueError:
        raise CatalogueError(f"expected an IP id (a number); got {value!r}") from None
    if not 1 <= ip_id <= MAX_AUTO_ID:
        raise CatalogueError(f"no IP with id {ip_id} (IP ids run from 1 to {MAX_AUTO_ID})")
    return ip_id


def ip_id_option(value: str) -> int:
    """``parse_ip_id`` as an argparse type (``--ip ID``): a bad id is a usage error naming the option."""
    from lib.scheduling.catalogue import CatalogueError

    try:
        return parse_ip_id(value)
    except CatalogueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def serve_until_interrupted(server, banner: str) -> int:
    """Keep a background server (LocalHttpServer) up until Ctrl-C."""
    print(f"{banner}; Ctrl-C stops it", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()
    return 0


def app_read_side():
    from lib.core.db import bind_database
    from lib.core.redis_client import state_redis
    from lib.market.read_side import ReadSide

    settings = app_settings()
    bind_database(settings.database_url_resolved)
    try:
        client = state_redis(settings)
    except Exception as e:  # the database answers on its own
        print(f"animetop: Redis unavailable ({e}); reading the database", file=sys.stderr)
        client = None
    return ReadSide(settings, client)
