"""When each IP is crawled: the schedule, the in-flight set, the scheduler tick and the IP catalogue."""
