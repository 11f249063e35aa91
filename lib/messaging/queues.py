"""Queue names, one place: process types consume these (see Procfile)."""

CRAWL = "crawl"
PIPELINE = "pipeline"
SCHEDULER = "scheduler"
POOL = "pool"
COLLECT = "collect"
MAINTENANCE = "maintenance"
NOTIFY = "notify"

#: Everything the ``worker`` process type consumes (all but the crawl queue).
WORKER_QUEUES = (SCHEDULER, PIPELINE, POOL, COLLECT, NOTIFY, MAINTENANCE)
CRAWLER_QUEUES = (CRAWL,)
ALL_QUEUES = (*CRAWLER_QUEUES, *WORKER_QUEUES)
