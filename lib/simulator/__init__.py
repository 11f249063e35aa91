"""A local market that behaves like jp.mercari.com's search (tests, demo, benchmarks)."""

from .server import MarketSimulator

__all__ = ["MarketSimulator"]
