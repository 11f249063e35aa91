"""A local market that behaves like jp.mercari.com's search (tests, demo, benchmarks)."""

from lib.standins.simulator.server import MarketSimulator

__all__ = ["MarketSimulator"]
