"""Database schema (Peewee models). Models hold schema, not business rules."""

from .base import BaseModel
from .execution_state import CollectorExecutionState
from .ip import IpMetadata

#: Every table ``animetop db init`` creates, in dependency order.
ALL_MODELS: list[type[BaseModel]] = [IpMetadata, CollectorExecutionState]

__all__ = ["ALL_MODELS", "BaseModel", "CollectorExecutionState", "IpMetadata"]
