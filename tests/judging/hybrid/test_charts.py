"""The error bars' figures and labels are written in Python as the template filters wrote them."""

import random

from django.template.defaultfilters import floatformat, truncatechars

from judging.hybrid.charts import error_bars, fixed


def test_a_figure_is_written_as_floatformat_writes_it():
    rng = random.Random(3)
    values = [0.0, -0.0, -0.00001, 0.12345, 1.00005, 2.675, 5e-05, -0.99995, 1234.5, 0.5]
    values += [rng.uniform(-2, 2) for _ in range(500)] + [round(rng.uniform(-1, 1), 5) for _ in range(500)]
    for value in values:
        for places in (1, 4):
            assert fixed(value, places) == floatformat(value, places), (value, places)
    for value in (float("nan"), float("inf"), float("-inf")):
        assert fixed(value) == floatformat(value, 4)


def test_each_bar_carries_its_figures_and_its_label_cut_as_truncatechars_cuts_it():
    long = "a-run-name-longer-than-the-chart-has-room-for"
    chart = error_bars([(long, 0.5, 0.25, 0.75), ("short", 0.1, 0.0, 0.2)])

    first, second = chart["rows"]
    assert first["label"] == long and first["short"] == truncatechars(long, 28)
    assert first["figures"] == "0.5000 [0.2500, 0.7500]"
    assert second["short"] == "short" and second["label_y"] == second["y"] + 4
