"""Forecasts (docs/concepts/forecasts.md): each IP's next days of each forecast measure, and the marks of the IPs
whose daily rows changed since their forecasts were made."""

import peewee

from .base import BaseModel, CodeField, ExactCharField, NaturalKeyMetadata
from .segment import SEGMENT_KEY_MAX_LENGTH


class ForecastDays(BaseModel):
    """One day ahead of one series' forecast (``lib.forecast``): the point forecast and its 80 % and 95 % intervals,
    from the daily rows up to ``origin``. The columns ``ip_forecasts`` (an IP's series) and ``segment_forecasts``
    (one segment's of an IP) share; a base of models, no table of its own."""

    measure = peewee.CharField(max_length=16)  # inflow, outflow or median_price
    day = peewee.DateTimeField()  # naive UTC midnight of the day forecast
    origin = peewee.DateTimeField()  # naive UTC midnight of the last day of history it was fitted on
    history_days = peewee.IntegerField()  # the days of history it was fitted on
    model = peewee.CharField(max_length=32)  # the model's name as the forecasting library gives it
    fingerprint = peewee.CharField(max_length=16)  # of the history fitted on (lib.forecast.values.History)
    fitted_at = peewee.DoubleField()  # Unix seconds
    mean = peewee.DoubleField()
    lo80 = peewee.DoubleField()
    hi80 = peewee.DoubleField()
    lo95 = peewee.DoubleField()
    hi95 = peewee.DoubleField()
    # the 95 % interval of a day without a burst, where the history had bursts (NULL: lo95, hi95)
    ordinary_lo95 = peewee.DoubleField(null=True)
    ordinary_hi95 = peewee.DoubleField(null=True)


class IpForecast(ForecastDays):
    """One day ahead of one IP's forecast of one measure (``ForecastDays``). A refit replaces every row of the
    measure."""

    id = peewee.AutoField()  # peewee's implicit key, declared for the type checker

    ip_id = peewee.IntegerField()

    class Meta:
        table_name = "ip_forecasts"
        indexes = ((("ip_id", "measure", "day"), True),)


class SegmentForecast(ForecastDays):
    """One day ahead of the forecast of one measure of one segment (a goods type or a character) of an IP's
    listings (``ForecastDays``), from its daily rows (``segment_daily_flows``). A refit replaces every row of the
    segment's measure."""

    ip_id = peewee.IntegerField()
    kind = CodeField(("goods", "character"))
    key = ExactCharField(max_length=SEGMENT_KEY_MAX_LENGTH)

    class Meta:
        table_name = "segment_forecasts"
        model_metadata_class = NaturalKeyMetadata
        primary_key = peewee.CompositeKey("ip_id", "kind", "key", "measure", "day")
        without_rowid = True
        indexes = ((("kind", "measure", "key"), False),)  # the What sells page: a kind's segments across IPs


class IpDailyChanged(BaseModel):
    """An IP whose daily rows the rollup wrote since its forecasts were made: written in the rollup's transaction,
    removed by the refit (``lib.forecast.refresh``)."""

    ip_id = peewee.IntegerField(primary_key=True)
    version = peewee.IntegerField(default=1)  # one more each time a rollup marks it again

    class Meta:
        table_name = "ip_daily_changed"


class ForecastCheck(BaseModel):
    """The last closed day of one series' flow held against the forecast made for it the day before
    (``lib.forecast.breakouts``): the rising board ranks these. The columns ``ip_forecast_checks`` and
    ``segment_forecast_checks`` share; a base of models, no table of its own."""

    measure = peewee.CharField(max_length=16)
    day = peewee.DateTimeField()  # naive UTC midnight
    value = peewee.DoubleField()  # the day's flow, scaled to the whole day (lib.forecast.series)
    mean = peewee.DoubleField()
    lo95 = peewee.DoubleField()  # the 95 % interval of an ordinary day the day was held against
    hi95 = peewee.DoubleField()
    score = peewee.DoubleField()  # how far above the forecast: (value - mean) / (hi95 - mean); above 1 breaks out


class IpForecastCheck(ForecastCheck):
    """An IP's flow's last closed day against its forecast (``ForecastCheck``)."""

    ip_id = peewee.IntegerField()

    class Meta:
        table_name = "ip_forecast_checks"
        primary_key = peewee.CompositeKey("ip_id", "measure")
        indexes = ((("measure", "day", "score"), False),)


class SegmentForecastCheck(ForecastCheck):
    """A segment's flow's last closed day against its forecast (``ForecastCheck``)."""

    ip_id = peewee.IntegerField()
    kind = CodeField(("goods", "character"))
    key = ExactCharField(max_length=SEGMENT_KEY_MAX_LENGTH)

    class Meta:
        table_name = "segment_forecast_checks"
        model_metadata_class = NaturalKeyMetadata
        primary_key = peewee.CompositeKey("ip_id", "kind", "key", "measure")
        without_rowid = True
        indexes = ((("kind", "measure", "day", "score"), False),)


class Breakout(BaseModel):
    """A closed day whose flow left the 95 % interval of an ordinary day of the forecast made for it the day before
    (``lib.forecast.breakouts``; ``lo95``, ``hi95``: that interval). The columns ``ip_breakouts`` and
    ``segment_breakouts`` share; a base of models, no table of its own."""

    measure = peewee.CharField(max_length=16)
    day = peewee.DateTimeField()  # naive UTC midnight
    direction = peewee.CharField(max_length=4)  # up or down
    value = peewee.DoubleField()
    mean = peewee.DoubleField()
    lo95 = peewee.DoubleField()
    hi95 = peewee.DoubleField()
    found_at = peewee.DoubleField()  # Unix seconds


class IpBreakout(Breakout):
    """An IP's breakout (``Breakout``)."""

    id = peewee.AutoField()  # peewee's implicit key, declared for the type checker

    ip_id = peewee.IntegerField()

    class Meta:
        table_name = "ip_breakouts"
        indexes = ((("ip_id", "measure", "day"), True), (("day",), False))


class SegmentBreakout(Breakout):
    """A segment's breakout (``Breakout``)."""

    ip_id = peewee.IntegerField()
    kind = CodeField(("goods", "character"))
    key = ExactCharField(max_length=SEGMENT_KEY_MAX_LENGTH)

    class Meta:
        table_name = "segment_breakouts"
        model_metadata_class = NaturalKeyMetadata
        primary_key = peewee.CompositeKey("ip_id", "kind", "key", "measure", "day")
        without_rowid = True
        indexes = ((("day",), False),)
