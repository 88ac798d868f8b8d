"""The one Cohen's kappa: judging.measures.agreement.cohen_kappa, equal to scikit-learn's where both are defined."""

import pytest
from sklearn.metrics import cohen_kappa_score

from judging.measures.agreement import cohen_kappa

LABELS = ["FS", "PS", "NS"]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (["FS", "FS", "PS"], ["FS", "NS", "PS"]),
        (["FS", "PS", "NS", "NS", "FS"], ["PS", "PS", "NS", "FS", "FS"]),
        (["FS", "FS"], ["NS", "NS"]),
    ],
)
@pytest.mark.parametrize("weights", ["none", "linear", "quadratic"])
def test_it_equals_scikit_learn(a, b, weights):
    expected = cohen_kappa_score(a, b, labels=LABELS, weights=None if weights == "none" else weights)
    assert cohen_kappa(a, b, labels=LABELS, weights=weights) == pytest.approx(expected)


def test_it_is_none_where_kappa_is_undefined():
    assert cohen_kappa([], [], labels=LABELS) is None
    assert cohen_kappa(["FS", "FS"], ["FS", "FS"], labels=LABELS) is None


def test_it_refuses_a_label_off_the_scale_and_unpaired_labels():
    with pytest.raises(ValueError, match="not one of"):
        cohen_kappa(["FS"], ["yes"], labels=LABELS)
    with pytest.raises(ValueError, match="differ in length"):
        cohen_kappa(["FS"], [], labels=LABELS)
