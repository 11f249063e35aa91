"""Dramatiq: the broker, its middleware, encoding, dead letters, queue names and actor routes; Dramatiq's
and periodiq's internals only in ``compat``."""
