"""The `agreement`, `rank_agreement` and `campaign_report` commands, on the real iKAT 2024 qrels and on
small factory-built collections."""

from __future__ import annotations

import json

import krippendorff
import numpy as np
import pytest
from django.core.management import CommandError
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    RelevanceJudgmentFactory,
    TopicFactory,
    TurnFactory,
)
from tests.judging.helpers import run as run_command

REQUIRED_KEYS = {
    "task",
    "judges",
    "n",
    "labels",
    "exact_agreement",
    "cohen_kappa",
    "weighted_kappa_linear",
    "weighted_kappa_quadratic",
    "krippendorff_alpha",
    "kappa_ci95",
    "confusion_matrix",
    "per_topic",
}


def _read_qrels(path) -> dict[tuple[str, str], int]:
    qrels = {}
    for line in path.read_text().splitlines():
        if line.strip():
            qid, _zero, docid, grade = line.split()
            qrels[(qid, docid)] = int(grade)
    return qrels


def _perturb(qrels: dict[tuple[str, str], int], seed: int) -> dict[tuple[str, str], int]:
    """Another judge: drop some units, move some grades by one step, reassign a few at random."""
    rng = np.random.default_rng(seed)
    other = {}
    for key, grade in qrels.items():
        roll = rng.random()
        if roll < 0.1:
            continue
        if roll < 0.35:
            grade = int(np.clip(grade + rng.choice([-1, 1]), 0, 4))
        elif roll < 0.4:
            grade = int(rng.integers(0, 5))
        other[key] = grade
    return other


@pytest.fixture
def ikat2024(shared_data, tmp_path):
    folder = shared_data / "ikat2024"
    official = _read_qrels(folder / "2024_test_qrels.trec")
    perturbed = _perturb(official, seed=2024)
    path = tmp_path / "perturbed.qrels"
    path.write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in perturbed.items()))
    run_command("import_topics", str(folder / "2024_test_topics.json"), "--collection", "ikat24")
    run_command(
        "import_qrels", str(folder / "2024_test_qrels.trec"), "--collection", "ikat24", "--judge", "nist"
    )
    run_command("import_qrels", str(path), "--collection", "ikat24", "--judge", "perturbed")
    return official, perturbed


@pytest.mark.django_db
def test_it_equals_sklearn_and_krippendorff_on_the_ikat2024_qrels(ikat2024):
    official, perturbed = ikat2024
    shared = sorted(official.keys() & perturbed.keys())
    a = np.array([official[k] for k in shared])
    b = np.array([perturbed[k] for k in shared])

    report = json.loads(
        run_command(
            "agreement",
            "--collection",
            "ikat24",
            "--task",
            "relevance",
            "--judges",
            "nist",
            "perturbed",
            "--binary-threshold",
            "2",
            "--format",
            "json",
        )
    )

    assert REQUIRED_KEYS <= report.keys()
    assert report["task"] == "relevance" and report["judges"] == ["nist", "perturbed"]
    assert report["labels"] == [0, 1, 2, 3, 4]
    assert report["n"] == len(shared)
    assert report["exact_agreement"] == pytest.approx(np.mean(a == b))
    assert report["cohen_kappa"] == pytest.approx(cohen_kappa_score(a, b))
    assert report["weighted_kappa_linear"] == pytest.approx(cohen_kappa_score(a, b, weights="linear"))
    assert report["weighted_kappa_quadratic"] == pytest.approx(cohen_kappa_score(a, b, weights="quadratic"))
    assert report["krippendorff_alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=np.vstack([a, b]).astype(float), level_of_measurement="ordinal")
    )
    assert report["confusion_matrix"] == confusion_matrix(a, b, labels=[0, 1, 2, 3, 4]).tolist()
    assert report["binary"]["cohen_kappa"] == pytest.approx(cohen_kappa_score(a >= 2, b >= 2))
    low, high = report["kappa_ci95"]
    assert low < report["cohen_kappa"] < high
    topics = {qid.split("_")[0] for qid, _doc in shared}
    assert {row["topic"] for row in report["per_topic"]} == topics
    first = report["per_topic"][0]
    mask = np.array([qid.split("_")[0] == first["topic"] for qid, _doc in shared])
    assert first["n"] == mask.sum()
    assert first["cohen_kappa"] == pytest.approx(cohen_kappa_score(a[mask], b[mask]))


@pytest.mark.django_db
def test_it_computes_alpha_over_all_judges_with_missing_labels(ikat2024, shared_data):
    official, perturbed = ikat2024
    keys = sorted(official.keys() | perturbed.keys())
    data = np.array(
        [
            [official.get(k, np.nan) for k in keys],
            [perturbed.get(k, np.nan) for k in keys],
            [official.get(k, np.nan) for k in keys],
        ],
        dtype=float,
    )
    official_path = shared_data / "ikat2024" / "2024_test_qrels.trec"
    run_command("import_qrels", str(official_path), "--collection", "ikat24", "--judge", "nist-copy")
    report = json.loads(
        run_command(
            "agreement",
            "--collection",
            "ikat24",
            "--task",
            "relevance",
            "--judges",
            "nist",
            "perturbed",
            "nist-copy",
            "--format",
            "json",
            "--resamples",
            "10",
        )
    )
    assert report["krippendorff_alpha_all_judges"] == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal")
    )


@pytest.mark.django_db
def test_it_filters_topics_and_writes_csv_and_text(ikat2024):
    official, perturbed = ikat2024
    topic = sorted({qid.split("_")[0] for qid, _doc in official})[0]
    report = json.loads(
        run_command(
            "agreement",
            "--collection",
            "ikat24",
            "--task",
            "relevance",
            "--judges",
            "nist",
            "perturbed",
            "--topics",
            topic,
            "--format",
            "json",
        )
    )
    assert [row["topic"] for row in report["per_topic"]] == [topic]
    assert any("Only one topic" in note for note in report["notes"])
    # Resampling one topic would give a zero-width interval; it is undefined instead.
    assert report["cohen_kappa"] is not None and report["kappa_ci95"] is None
    csv_text = run_command(
        "agreement",
        "--collection",
        "ikat24",
        "--task",
        "relevance",
        "--judges",
        "nist",
        "perturbed",
        "--topics",
        topic,
        "--format",
        "csv",
    )
    lines = csv_text.splitlines()
    assert lines[0].startswith("task,judge_a,judge_b,topic,n,exact_agreement,cohen_kappa")
    assert lines[1].startswith(f"relevance,nist,perturbed,all,{report['n']},")
    text = run_command(
        "agreement",
        "--collection",
        "ikat24",
        "--task",
        "relevance",
        "--judges",
        "nist",
        "perturbed",
        "--topics",
        topic,
    )
    assert f"units labelled by both: {report['n']}" in text
    assert "confusion matrix (rows A, columns B)" in text


def _tiny_collection(grades_a, grades_b):
    collection = CollectionFactory()
    turn = TurnFactory(topic=TopicFactory(collection=collection))
    judge_a, judge_b = JudgeFactory(), JudgeFactory()
    for i, grade in enumerate(grades_a):
        if grade is not None:
            RelevanceJudgmentFactory(judge=judge_a, turn=turn, passage_id=f"p{i}", grade=grade)
    for i, grade in enumerate(grades_b):
        if grade is not None:
            RelevanceJudgmentFactory(judge=judge_b, turn=turn, passage_id=f"p{i}", grade=grade)
    return collection, judge_a, judge_b


@pytest.mark.django_db
def test_it_says_clearly_when_the_judges_share_no_unit():
    collection, judge_a, judge_b = _tiny_collection([1, 2, None, None], [None, None, 3, 0])
    with pytest.raises(CommandError, match="share no labelled relevance units"):
        run_command(
            "agreement",
            "--collection",
            collection.name,
            "--task",
            "relevance",
            "--judges",
            judge_a.name,
            judge_b.name,
        )


@pytest.mark.django_db
def test_it_reports_undefined_kappa_as_null_with_a_note_when_one_label_only():
    collection, judge_a, judge_b = _tiny_collection([0, 0, 0], [0, 0, 0])
    report = json.loads(
        run_command(
            "agreement",
            "--collection",
            collection.name,
            "--task",
            "relevance",
            "--judges",
            judge_a.name,
            judge_b.name,
            "--format",
            "json",
        )
    )
    assert report["n"] == 3 and report["exact_agreement"] == 1.0
    assert report["cohen_kappa"] is None and report["krippendorff_alpha"] is None
    assert report["notes"]


@pytest.mark.django_db
def test_it_rejects_unknown_judges_tasks_and_thresholds_on_binary_tasks():
    collection, judge_a, judge_b = _tiny_collection([0, 1], [1, 1])
    with pytest.raises(CommandError, match="no judge named 'ghost'"):
        run_command(
            "agreement",
            "--collection",
            collection.name,
            "--task",
            "relevance",
            "--judges",
            judge_a.name,
            "ghost",
        )
    with pytest.raises(CommandError, match="invalid choice"):
        run_command(
            "agreement",
            "--collection",
            collection.name,
            "--task",
            "vibes",
            "--judges",
            judge_a.name,
            judge_b.name,
        )
    with pytest.raises(CommandError, match="relevance only"):
        run_command(
            "agreement",
            "--collection",
            collection.name,
            "--task",
            "ptkb",
            "--judges",
            judge_a.name,
            judge_b.name,
            "--binary-threshold",
            "1",
        )
    with pytest.raises(CommandError, match="no collection named"):
        run_command(
            "agreement", "--collection", "nope", "--task", "relevance", "--judges", judge_a.name, judge_b.name
        )


@pytest.mark.django_db
def test_it_writes_a_standalone_html_comparison_with_an_inline_heatmap():
    collection, judge_a, judge_b = _tiny_collection([0, 1, 2, 3], [0, 1, 3, 3])
    html = run_command(
        "agreement",
        "--collection",
        collection.name,
        "--task",
        "relevance",
        "--judges",
        judge_a.name,
        judge_b.name,
        "--format",
        "html",
    )
    assert html.lstrip().startswith("<!doctype html>")
    assert 'src="data:image/svg+xml;base64,' in html
    assert f"{cohen_kappa_score([0, 1, 2, 3], [0, 1, 3, 3]):.3f}" in html


@pytest.mark.django_db
def test_it_writes_the_campaign_report_as_html_and_json(tmp_path):
    collection, judge_a, judge_b = _tiny_collection([0, 1, 2, 3, 4], [0, 1, 3, 3, 4])
    target = tmp_path / "report.html"
    assert "wrote" in run_command("campaign_report", "--collection", collection.name, "--output", str(target))
    html = target.read_text()
    assert "Passage relevance (0-4)" in html and "Support" in html
    data = json.loads(
        run_command(
            "campaign_report", "--collection", collection.name, "--format", "json", "--resamples", "50"
        )
    )
    graded, binary = data["sections"][0], data["sections"][1]
    assert graded["rows"][0]["judges"] == [judge_a.name, judge_b.name]
    assert graded["rows"][0]["cohen_kappa"] == pytest.approx(
        cohen_kappa_score([0, 1, 2, 3, 4], [0, 1, 3, 3, 4])
    )
    assert binary["rows"][0]["cohen_kappa"] == pytest.approx(
        cohen_kappa_score(np.array([0, 1, 2, 3, 4]) >= 2, np.array([0, 1, 3, 3, 4]) >= 2)
    )
    with pytest.raises(CommandError, match="no collection named"):
        run_command("campaign_report", "--collection", "nope")
