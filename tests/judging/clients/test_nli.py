"""The NLI client on a tiny randomly initialised DeBERTa-v2 model built and saved inside the test."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from judging.clients import nli as nli_client
from tests.judging.nli_model import ID2LABEL, SENTENCES

PAIRS = [(premise, hypothesis) for premise in SENTENCES for hypothesis in SENTENCES[::-1]] + [
    ("Paris", "The Eiffel Tower is in Paris and is 330 metres tall and the museum opens at nine."),
    ("A marathon is long.", "marathon"),
]


def _independent_probs(folder: Path, pairs: list[tuple[str, str]]) -> list[float]:
    """One pair at a time, straight through transformers, softmax read at the "ENTAILMENT" index."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(folder, local_files_only=True).eval()
    index = next(i for i, label in ID2LABEL.items() if label == "ENTAILMENT")
    probs = []
    with torch.no_grad():
        for premise, hypothesis in pairs:
            logits = model(**tokenizer(premise, hypothesis, return_tensors="pt")).logits
            probs.append(torch.softmax(logits, dim=-1)[0, index].item())
    return probs


def test_it_reads_the_entailment_index_from_the_models_id2label(tiny_model_dir: Path) -> None:
    model = nli_client.nli_model(str(tiny_model_dir))

    assert model.entailment_label == 2
    assert model.device == "cpu"
    assert str(next(model.model.parameters()).dtype) == "torch.float32"


def test_its_probabilities_equal_a_forward_pass_done_by_hand(tiny_model_dir: Path) -> None:
    model = nli_client.nli_model(str(tiny_model_dir))

    probs = model.entailment_probs(PAIRS[:10], batch_size=4)

    assert probs == pytest.approx(_independent_probs(tiny_model_dir, PAIRS[:10]), abs=1e-5)


def test_batching_gives_the_same_labels_as_one_by_one(tiny_model_dir: Path) -> None:
    one_by_one = nli_client.nli_model(str(tiny_model_dir)).entailment_probs(PAIRS, batch_size=1)
    # A threshold in the middle of the scores, so the labels really split and a change would show.
    threshold = statistics.median(one_by_one)
    model = nli_client.nli_model(str(tiny_model_dir), threshold=threshold)

    batched_labels = model.entails(PAIRS, batch_size=16)
    single_labels = model.entails(PAIRS, batch_size=1)

    assert batched_labels == single_labels
    assert True in batched_labels and False in batched_labels
    assert model.entailment_probs(PAIRS, batch_size=16) == pytest.approx(one_by_one, abs=1e-5)


def test_it_returns_scores_in_input_order_although_batches_are_sorted_by_length(tiny_model_dir: Path) -> None:
    model = nli_client.nli_model(str(tiny_model_dir))
    reversed_pairs = PAIRS[::-1]

    forward = model.entailment_probs(PAIRS, batch_size=8)
    backward = model.entailment_probs(reversed_pairs, batch_size=8)

    assert backward == pytest.approx(forward[::-1], abs=1e-5)
    assert model.entailment_probs([], batch_size=8) == []


def test_it_loads_the_weights_once_and_keeps_thresholds_per_handle(tiny_model_dir: Path) -> None:
    loose = nli_client.nli_model(str(tiny_model_dir), threshold=0.1)
    strict = nli_client.nli_model(str(tiny_model_dir), threshold=0.9)

    assert loose.model is strict.model
    assert (loose.threshold, strict.threshold) == (0.1, 0.9)
    probs = loose.entailment_probs(PAIRS)
    assert loose.entails(PAIRS) == [p >= 0.1 for p in probs]
    assert strict.entails(PAIRS) == [p >= 0.9 for p in probs]


def test_it_takes_model_threshold_and_batch_size_from_settings(tiny_model_dir: Path, settings) -> None:
    settings.NLI_MODEL = str(tiny_model_dir)
    settings.NLI_THRESHOLD = 0.25
    settings.NLI_BATCH_SIZE = 7

    model = nli_client.nli_model()

    assert (model.name, model.threshold, model.batch_size) == (str(tiny_model_dir.resolve()), 0.25, 7)


def test_it_rejects_a_threshold_outside_0_1(tiny_model_dir: Path) -> None:
    with pytest.raises(nli_client.NliError, match="threshold"):
        nli_client.nli_model(str(tiny_model_dir), threshold=1.5)


def test_it_rejects_a_model_without_an_entailment_label() -> None:
    with pytest.raises(nli_client.NliError, match="entailment"):
        nli_client.entailment_index({0: "LABEL_0", 1: "LABEL_1"})
    assert nli_client.entailment_index({"0": "contradiction", "1": "Entailment"}) == 1


def test_it_raises_its_own_error_for_a_model_it_cannot_load(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # never reach for the hub from a test
    nli_client.clear_cache()

    with pytest.raises(nli_client.NliError, match="cannot load"):
        nli_client.nli_model("assay-tests/no-such-model")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(nli_client.NliError, match="cannot load"):
        nli_client.nli_model(str(empty))
