"""The one natural sort: annotation.selectors.natural_key."""

from core.ordering import natural_key


def test_it_sorts_turn_ids_nugget_keys_and_span_keys_the_way_people_read_them():
    assert sorted(["10_2", "9_12", "9_2", "9-3"], key=natural_key) == ["9_2", "9-3", "9_12", "10_2"]
    assert sorted(["[10]", "[9]", "[1]"], key=natural_key) == ["[1]", "[9]", "[10]"]
    assert sorted(["p3:120", "p3:9", "p10:1"], key=natural_key) == ["p3:9", "p3:120", "p10:1"]


def test_it_never_compares_a_number_with_text():
    assert sorted(["a", "1", "b2", "b10", ""], key=natural_key) == ["", "1", "a", "b2", "b10"]
