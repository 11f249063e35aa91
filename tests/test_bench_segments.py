"""``python -m bench segments``: its precision and recall, per goods type and micro-averaged, for each part of the
labelled sample, are the ones computed here from the definitions (tests/segments/test_labelled_sample.py)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from lib.segments.classify import classify

from .segments.test_labelled_sample import HELD_OUT, IDS, TUNING, micro, read

ROOT = Path(__file__).resolve().parent.parent
ROW = re.compile(r"^  (\S+(?: \(not other\))?) +(\d+) +(\d+) +(\d+) +(\d+) +([\d.]+|-) +([\d.]+|-)")


def per_type(rows) -> dict[str, tuple[float | None, float | None]]:
    result = {}
    for t in IDS:
        answered = [t in classify(title) for title, _ in rows]
        labelled = [t in labels for _, labels in rows]
        tp = sum(a and b for a, b in zip(answered, labelled))
        result[t] = (tp / sum(answered) if sum(answered) else None, tp / sum(labelled) if sum(labelled) else None)
    return result


def printed(section: str) -> dict[str, tuple[float | None, float | None]]:
    values = {}
    for line in section.splitlines():
        if m := ROW.match(line):
            p, r = (None if v == "-" else float(v) for v in m.group(6, 7))
            values[m.group(1)] = (p, r)
    return values


def close(a: float | None, b: float | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and abs(a - b) < 0.0005)


@pytest.mark.slow  # the bench in a subprocess; the fast tier holds the goal itself (segments/test_labelled_sample.py)
def test_the_bench_prints_the_definitions_values_for_both_parts():
    done = subprocess.run([sys.executable, "-m", "bench", "segments"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    tuning_section = done.stdout.split("tuning:")[1].split("held-out:")[0]
    held_out_section = done.stdout.split("held-out:")[1].split("speed")[0]
    for section, path in ((tuning_section, TUNING), (held_out_section, HELD_OUT)):
        rows = read(path)
        values = printed(section)
        assert set(values) == IDS | {"micro (not other)"}
        for name, (p, r) in {**per_type(rows), "micro (not other)": micro(rows)}.items():
            assert close(values[name][0], p) and close(values[name][1], r), (path.name, name, values[name], (p, r))
        assert "goal P>=0.95 R>=0.9: met" in section
