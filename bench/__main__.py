"""``python -m bench``: every benchmark, each as ratios against a floor measured in the same run."""

from . import encoding, schedule_tick

BENCHMARKS = [encoding.main, schedule_tick.main]

if __name__ == "__main__":
    for bench in BENCHMARKS:
        bench()
        print()
