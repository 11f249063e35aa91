"""Queue names, one place: process types consume these (see Procfile)."""

CRAWL = "crawl"
PIPELINE = "pipeline"
SCHEDULER = "scheduler"
POOL = "pool"
COLLECT = "collect"
MAINTENANCE = "maintenance"

#: Everything the ``worker`` process type consumes (all but the crawl queue).
WORKER_QUEUES = (SCHEDULER, PIPELINE, POOL, COLLECT, MAINTENANCE)
CRAWLER_QUEUES = (CRAWL,)
