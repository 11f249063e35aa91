"""Database schema (Peewee models). Models hold schema, not business rules."""

from .base import BaseModel

#: Every table ``animetop db init`` creates, in dependency order.
ALL_MODELS: list[type[BaseModel]] = []

__all__ = ["ALL_MODELS", "BaseModel"]
