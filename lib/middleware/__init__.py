"""The middleware every animetop actor runs under (see ``lib.broker``)."""

from .arguments import ArgumentCheck
from .database import DatabaseConnections
from .dead_letters import DeadLetterReasons
from .idempotency import Idempotency
from .in_flight import InFlightRelease
from .leases import LeaseKeeper
from .locks import Locks
from .retries import Retries

__all__ = [
    "ArgumentCheck", "DatabaseConnections", "DeadLetterReasons", "Idempotency", "InFlightRelease", "LeaseKeeper", "Locks", "Retries",
]
