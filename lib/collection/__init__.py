"""Incremental collection from an export API (docs/operating/collection.md)."""
