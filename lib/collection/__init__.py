"""Incremental collection from an export API (seed 004)."""
