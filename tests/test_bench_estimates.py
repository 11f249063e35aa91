"""``python -m bench estimates``: its options, its table against a computation written here, and a tiny run."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.estimates import Held, Options, options, table

ROOT = Path(__file__).resolve().parent.parent


def test_options_name_the_seeds_the_references_the_days_and_the_sizes():
    assert options([]) == Options()
    assert options(["--seeds", "3-5", "--references", "2", "--days", "1", "--sizes", "40,600"]) == Options(
        (3, 4, 5), 2, 1, (40.0, 600.0))
    assert options(["--seeds", "7"]).seeds == (7,)
    for wrong in (["--references", "11"], ["--days", "0"], ["--seeds", "x"], ["--seeds", "5-3"], ["--sizes"],
                  ["--what", "1"]):
        with pytest.raises(SystemExit):
            options(wrong)


def test_the_table_counts_intervals_held_and_scales_the_errors_by_the_half_width():
    rows = [Held(40.0, 110.0, 90.0, 130.0, 100), Held(40.0, 100.0, 95.0, 105.0, 110),
            Held(600.0, 1000.0, 800.0, 1200.0, 1000)]
    lines = table(rows)
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
    z = [(110 - 100) / (20 / 1.96), (100 - 110) / (5 / 1.96)]
    mean, spread = sum(z) / 2, abs(z[0] - z[1]) / 2
    assert cells[0] == ["40", "2", "1 (50%)", f"{210 / 210:.3f}×", f"{mean:+.2f}, {spread:.2f}"]
    assert cells[1] == ["600", "1", "1 (100%)", "1.000×", "+0.00, 0.00"]
    assert cells[2][:4] == ["all", "3", "2 (67%)", f"{1210 / 1210:.3f}×"]


@pytest.mark.slow  # a day of a middling IP and two small ones, crawled hourly from a week before
@pytest.mark.timeout(600)
def test_bench_estimates_prints_its_table():
    done = subprocess.run([sys.executable, "-m", "bench", "estimates", "--seeds", "1", "--references", "2",
                           "--days", "1", "--sizes", "40"], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("|")]
    assert len(lines) == 4 and lines[2].startswith("| 40 | 1 |") and lines[3].startswith("| all | 1 |"), done.stdout
