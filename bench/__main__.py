"""``python -m bench``: every benchmark, each as ratios against a floor measured in the same run."""

from . import encoding

BENCHMARKS = [encoding.main]

if __name__ == "__main__":
    for bench in BENCHMARKS:
        bench()
        print()
