"""Digits int() cannot read ('²' passes str.isdigit()) are text where ids are sorted and a refusal where a
number is expected, never a ValueError (a 500 on the page)."""

from __future__ import annotations

import pytest
from django import forms
from django.http import QueryDict

from annotation.rag_nuggets.forms import posted_labels
from core.ordering import natural_key


def test_natural_key_sorts_a_superscript_digit_as_text():
    assert sorted(["2", "²", "10"], key=natural_key) == ["2", "10", "²"]


def test_posted_labels_refuse_a_nugget_id_of_digits_int_cannot_read():
    with pytest.raises(forms.ValidationError, match="does not name a nugget"):
        posted_labels(QueryDict("label-²=vital"), ["vital", "okay"])
