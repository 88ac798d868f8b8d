"""Ids sort the way people read them, for the apps and the pure statistics alike."""

from hypothesis import example, given
from hypothesis import strategies as st

from core.ordering import natural_key, natural_order_bytes


def test_it_sorts_digit_runs_as_numbers_and_reads_dash_as_underscore():
    ids = ["10_2", "9_12", "[10]", "[9]", "p3:120", "p3:9", "2-10", "2_9"]
    assert sorted(ids, key=natural_key) == ["2_9", "2-10", "9_12", "10_2", "[9]", "[10]", "p3:9", "p3:120"]


def test_it_orders_a_digit_int_cannot_read_as_text():
    assert sorted(["x2", "x²", "x10"], key=natural_key) == ["x2", "x10", "x²"]


# Text with digit runs, dashes and the characters around and below '0', where an encoding that is not
# prefix-free would misorder a text part against the number after a shorter one.
_ID_CHARACTERS = st.sampled_from(
    ["0", "1", "9", "00", "10", "-", "_", ".", "!", " ", "\x01", "a", "ab", "é", "²"]
)


@given(st.lists(st.lists(_ID_CHARACTERS, max_size=6).map("".join), min_size=2, max_size=8))
@example(["a\x01", "a1"])
def test_its_bytes_sort_ids_as_the_natural_key_does(ids):
    by_key = sorted(ids, key=natural_key)

    assert sorted(ids, key=natural_order_bytes) == by_key
    for a in ids:
        for b in ids:
            assert (natural_order_bytes(a) == natural_order_bytes(b)) == (natural_key(a) == natural_key(b))


@given(
    st.text(st.characters(exclude_characters="\x00", exclude_categories=["Cs"]), max_size=12),
    st.text(st.characters(exclude_characters="\x00", exclude_categories=["Cs"]), max_size=12),
)
def test_its_bytes_compare_any_two_ids_as_the_natural_key_does(a, b):
    assert (natural_order_bytes(a) < natural_order_bytes(b)) == (natural_key(a) < natural_key(b))


def test_its_bytes_read_numbers_without_their_leading_zeros():
    assert natural_order_bytes("1_007") == natural_order_bytes("1-7")
    assert natural_order_bytes("2_9") < natural_order_bytes("2_10") < natural_order_bytes("10_1")
