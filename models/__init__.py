"""Database schema (Peewee models). Models hold schema, not business rules."""

from .base import BaseModel
from .character import IpCharacter
from .collect import CollectedRow, CollectionTask
from .crawl import CrawlSearchTotal
from .execution_state import JobExecutionState
from .forecast import (
    IpBreakout,
    IpDailyChanged,
    IpForecast,
    IpForecastCheck,
    SegmentBreakout,
    SegmentForecast,
    SegmentForecastCheck,
)
from .ip import IpMetadata
from .market import (
                     AlertDelivery,
                     AppliedResult,
                     IpAlert,
                     IpStatsHourly,
                     ItemSnapshot,
                     ListingEvent,
                     ListingRelist,
                     ListingSighting,
                     RelistUndecided,
)
from .pool import Content, Title
from .retention import IpDayPending, IpStatsDaily, StorageMark
from .segment import ListingSegment, SegmentDailyFlow, SegmentStatsDaily
from .window import IpWindowMeasures, IpWindowPending

#: Every table ``animetop db init`` creates, in dependency order.
ALL_MODELS: list[type[BaseModel]] = [
    IpMetadata, JobExecutionState, ItemSnapshot, IpStatsHourly, IpAlert, AppliedResult, Title, Content,
    CollectionTask, CollectedRow, AlertDelivery, CrawlSearchTotal, ListingSighting, ListingEvent, ListingRelist,
    RelistUndecided, IpStatsDaily, IpDayPending, StorageMark, IpWindowMeasures, IpWindowPending, IpCharacter,
    ListingSegment, SegmentStatsDaily, IpForecast, IpDailyChanged, IpForecastCheck, IpBreakout, SegmentDailyFlow,
    SegmentForecast, SegmentForecastCheck, SegmentBreakout,
]

__all__ = ["ALL_MODELS", "AlertDelivery", "AppliedResult", "BaseModel", "CollectedRow", "CollectionTask", "Content",
           "CrawlSearchTotal", "IpAlert", "IpBreakout", "IpCharacter", "IpDailyChanged", "IpDayPending",
           "IpForecast", "IpForecastCheck", "IpMetadata", "IpStatsDaily", "IpStatsHourly", "IpWindowMeasures",
           "IpWindowPending", "ItemSnapshot", "JobExecutionState", "ListingEvent", "ListingRelist", "ListingSegment",
           "ListingSighting", "RelistUndecided", "SegmentBreakout", "SegmentDailyFlow", "SegmentForecast",
           "SegmentForecastCheck", "SegmentStatsDaily", "StorageMark", "Title"]
