"""Goods-type classification on the labelled sample (tests/segments/): precision and recall per goods type and
micro-averaged over the types other than ``other``, for the tuning part and the held-out part (titles the
matcher was never tuned on); and the classifier's speed (floor: normalizing the same titles)."""

from __future__ import annotations

from pathlib import Path

from lib.segments.classify import Classifier
from lib.segments.normalize import normalize
from lib.segments.taxonomy import OTHER

from .common import best_of, load_average, report

SAMPLE = Path(__file__).resolve().parent.parent / "tests" / "segments"
#: The parts of the labelled sample, by file.
PARTS = {"tuning": SAMPLE / "titles_tuning.tsv", "held-out": SAMPLE / "titles_held_out.tsv"}
#: The goal: micro-averaged over the types other than ``other``, on each part.
GOAL_PRECISION, GOAL_RECALL = 0.95, 0.90


def labelled(path: Path) -> list[tuple[str, set[str]]]:
    """``title<TAB>id,id`` a line, under a header line."""
    lines = path.read_text(encoding="utf-8").splitlines()[1:]
    return [(title, set(ids.split(","))) for title, ids in (line.split("\t") for line in lines if line)]


def scores(rows: list[tuple[str, set[str]]], classifier: Classifier) -> tuple[dict[str, list[int]], list[int]]:
    """Per type [true positives, false positives, false negatives], and their sums over the types but other."""
    per_type = {t: [0, 0, 0] for t in classifier.taxonomy.ids}
    for title, expected in rows:
        got = set(classifier.classify(title))
        for t, counts in per_type.items():
            counts[0] += t in got and t in expected
            counts[1] += t in got and t not in expected
            counts[2] += t in expected and t not in got
    micro = [sum(per_type[t][i] for t in per_type if t != OTHER) for i in range(3)]
    return per_type, micro


def ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def fmt(value: float | None) -> str:
    return "     -" if value is None else f"{value:6.3f}"


def part_table(name: str, rows: list[tuple[str, set[str]]], classifier: Classifier) -> bool:
    per_type, (tp, fp, fn) = scores(rows, classifier)
    print(f"{name}: {len(rows)} titles")
    print(f"  {'goods type':18} {'labelled':>8} {'TP':>5} {'FP':>5} {'FN':>5} {'precision':>9} {'recall':>8}")
    for t, (t_tp, t_fp, t_fn) in per_type.items():
        print(f"  {t:18} {t_tp + t_fn:8} {t_tp:5} {t_fp:5} {t_fn:5}    {fmt(ratio(t_tp, t_tp + t_fp))}   "
              f"{fmt(ratio(t_tp, t_tp + t_fn))}")
    precision, recall = ratio(tp, tp + fp) or 0.0, ratio(tp, tp + fn) or 0.0
    met = precision >= GOAL_PRECISION and recall >= GOAL_RECALL
    print(f"  {'micro (not other)':18} {tp + fn:8} {tp:5} {fp:5} {fn:5}    {fmt(precision)}   {fmt(recall)}   "
          f"goal P>={GOAL_PRECISION} R>={GOAL_RECALL}: {'met' if met else 'NOT MET'}")
    return met


def main() -> int:
    classifier = Classifier()
    print(f"goods types on the labelled sample ({classifier.taxonomy.source}); load {load_average()}")
    parts = {name: labelled(path) for name, path in PARTS.items()}
    met = [part_table(name, rows, classifier) for name, rows in parts.items()]
    titles = [title for rows in parts.values() for title, _ in rows]
    print(f"speed on the {len(titles)} titles (floor: normalizing them)")
    report("classify, all titles", best_of(lambda: [classifier.classify(t) for t in titles]),
           best_of(lambda: [normalize(t) for t in titles]))
    return 0 if all(met) else 1
