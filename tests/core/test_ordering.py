"""Ids sort the way people read them, for the apps and the pure statistics alike."""

from core.ordering import natural_key


def test_it_sorts_digit_runs_as_numbers_and_reads_dash_as_underscore():
    ids = ["10_2", "9_12", "[10]", "[9]", "p3:120", "p3:9", "2-10", "2_9"]
    assert sorted(ids, key=natural_key) == ["2_9", "2-10", "9_12", "10_2", "[9]", "[10]", "p3:9", "p3:120"]


def test_it_orders_a_digit_int_cannot_read_as_text():
    assert sorted(["x2", "x²", "x10"], key=natural_key) == ["x2", "x10", "x²"]
