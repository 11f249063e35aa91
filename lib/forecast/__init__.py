"""Forecasts of each IP's next days from its daily rows (docs/concepts/forecasts.md): the series forecast
(``series``), the models fitted on them (``fit``, the one module that imports the forecasting library), and the
stored forecasts kept current as days close (``refresh``)."""
