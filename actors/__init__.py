"""The Dramatiq actors. Importing this package configures the process and declares them.

``dramatiq actors`` and ``periodiq actors`` load it; scripts do
``from actors import crawl_ip; crawl_ip.send(...)``.
"""

from lib.app import setup

broker = setup()

from .collect import collect_batch, start_due_collections  # noqa: E402
from .crawl import crawl_ip  # noqa: E402
from .maintenance import ping  # noqa: E402
from .notify import deliver_alert, notify_alert  # noqa: E402
from .pipeline import process_result  # noqa: E402
from .pool import fill_all_pools, fill_pool, mark_used  # noqa: E402
from .schedule import schedule_tick  # noqa: E402

__all__ = ["broker", "collect_batch", "crawl_ip", "deliver_alert", "notify_alert", "fill_all_pools", "start_due_collections", "fill_pool", "mark_used", "ping", "process_result", "schedule_tick"]
