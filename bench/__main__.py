"""``python -m bench``: every benchmark, each as ratios against a floor measured in the same run."""

from . import collect, crawl, encoding, pool, process_result, schedule_tick

BENCHMARKS = [encoding.main, schedule_tick.main, process_result.main, pool.main, collect.main, crawl.main]

if __name__ == "__main__":
    for bench in BENCHMARKS:
        bench()
        print()
