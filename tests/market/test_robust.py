"""The robust summaries against values worked out by hand from their definitions (docs/concepts/measures.md)."""

import pytest

from lib.market import robust


def test_quantiles_interpolate_between_order_statistics():
    assert robust.median([5, 1, 3]) == 3
    assert robust.median([4, 1, 3, 2]) == 2.5  # the mean of the two middle values
    assert robust.quantile([10, 20, 30, 40, 50], 0.25) == 20  # position 0.25 × 4 = 1
    assert robust.quantile([10, 20, 30, 40], 0.25) == pytest.approx(17.5)  # position 0.75: 10 + 0.75 × 10
    assert robust.quantile([], 0.5) is None


def test_trimmed_mean_drops_a_tenth_from_each_end():
    prices = [1] + [1000] * 8 + [90_000]  # a placeholder and a set sale
    assert robust.trimmed_mean(prices) == 1000
    assert robust.trimmed_mean([1, 2, 3]) == 2  # ⌊0.3⌋ = 0 dropped
    assert robust.mad([1, 2, 3, 4, 100]) == 1  # median 3; deviations 2, 1, 0, 1, 97


def test_kaplan_meier_counts_the_censored_while_they_are_at_risk():
    # sold after 1 h and 3 h; two still on sale when last seen at 10 h
    curve = robust.kaplan_meier([(1.0, True), (3.0, True), (10.0, False), (10.0, False)])
    assert curve == [(1.0, 0.75), (3.0, 0.5)]  # 3/4, then 3/4 × 2/3
    assert robust.km_quantile(curve, 0.5) == 3.0  # the median of the sold alone would say 2 h
    assert robust.km_quantile(curve, 0.75) is None  # the curve never falls to 0.25: unknown, not 0


def test_kaplan_meier_a_listing_no_longer_seen_leaves_the_risk_set_at_its_last_sighting():
    # gone (censored) at 2 h, before the sale at 4 h: only two are at risk then
    curve = robust.kaplan_meier([(2.0, False), (4.0, True), (6.0, True)])
    assert curve == [(4.0, 0.5), (6.0, 0.0)]
    assert robust.km_quantile(curve, 0.5) == 4.0 and robust.km_quantile(curve, 0.25) == 4.0


def test_kaplan_meier_steps_count_who_is_at_risk():
    # sold at 1 h and (two) at 3 h; one censored at 3 h stays at risk for those sales, one gone at 2 h does not
    steps = robust.kaplan_meier_steps([(3.0, False), (1.0, True), (2.0, False), (3.0, True), (3.0, True),
                                       (9.0, False)])
    assert [(s.time, s.at_risk, s.events) for s in steps] == [(1.0, 6, 1), (3.0, 4, 2)]
    assert [s.survival for s in steps] == pytest.approx([5 / 6, 5 / 6 * 2 / 4])
    assert robust.kaplan_meier([(1.0, True), (2.0, False)]) == [(s.time, s.survival) for s in
                                                                robust.kaplan_meier_steps([(1.0, True), (2.0, False)])]
