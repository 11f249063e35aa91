"""From crawl results to market numbers: the per-listing state machine, applying a result, hourly
statistics and the read side."""
