"""The middleware every animetop actor runs under (see ``lib.messaging.broker``)."""

from lib.messaging.middleware.arguments import ArgumentCheck
from lib.messaging.middleware.database import DatabaseConnections
from lib.messaging.middleware.dead_letters import DeadLetterReasons
from lib.messaging.middleware.idempotency import Idempotency
from lib.messaging.middleware.in_flight import InFlightRelease
from lib.messaging.middleware.leases import LeaseKeeper
from lib.messaging.middleware.locks import Locks
from lib.messaging.middleware.retries import Retries

__all__ = [
    "ArgumentCheck", "DatabaseConnections", "DeadLetterReasons", "Idempotency", "InFlightRelease", "LeaseKeeper",
    "Locks", "Retries",
]
