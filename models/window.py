"""The read side's precomputed rows (README "Market data"): one row per IP and window, and the marks of the rows
a result changed."""

import peewee

from .base import BaseModel


class IpWindowMeasures(BaseModel):
    """One IP's measures over one precomputed window (``lib.market.window_rows``): the leaderboard's columns, typed
    so the database sorts by them (NULL: insufficient), the leaderboard row and every measure with its n as
    written by the one computation (JSON, so they read back exactly as computed), and the outflow sparkline."""

    id = peewee.AutoField()  # peewee's implicit key, declared for the type checker

    ip_id = peewee.IntegerField()
    hours = peewee.IntegerField()
    computed_at = peewee.DoubleField()  # Unix seconds
    heat = peewee.DoubleField(null=True)
    heat_low = peewee.DoubleField(null=True)  # the lower end of the heat's 95 % interval
    momentum = peewee.DoubleField(null=True)
    outflow = peewee.DoubleField(null=True)
    inflow = peewee.DoubleField(null=True)
    liquidity = peewee.DoubleField(null=True)
    sell_through = peewee.DoubleField(null=True)
    median_price = peewee.DoubleField(null=True)
    time_to_sell = peewee.DoubleField(null=True)
    row = peewee.TextField()  # the leaderboard row's measures (lib.market.read_side.leaderboard_row), JSON
    measures = peewee.TextField()  # every measure with its n (lib.market.windows.window_measures), JSON
    sparkline = peewee.TextField()  # {"since": Unix seconds, "line": [...]} (lib.market.series)

    class Meta:
        table_name = "ip_window_measures"
        indexes = ((("hours", "ip_id"), True),)


class IpWindowPending(BaseModel):
    """An IP's window whose row a result changed since it was computed: written in the result's transaction,
    removed by the recomputation of the row (``lib.market.window_rows``) if not marked again meanwhile."""

    id = peewee.AutoField()

    ip_id = peewee.IntegerField()
    hours = peewee.IntegerField()
    generation = peewee.IntegerField(default=0)  # raised by each marking of a row already pending

    class Meta:
        table_name = "ip_windows_pending"
        indexes = ((("hours", "ip_id"), True),)
