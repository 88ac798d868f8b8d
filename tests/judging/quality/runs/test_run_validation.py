"""A run's validation report: what its import refused, and what it accepted with warnings, kept on the run
and shown on the upload's page."""

from __future__ import annotations

import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse

from annotation.collection.io import run_import
from annotation.formats.base import ImportFailed
from annotation.models import Run
from console.models import ImportJob
from tests.factories import CollectionFactory, OrganiserFactory, TopicFactory, TurnFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def collection():
    collection = CollectionFactory(name="camp")
    for topic_number in ("1", "2"):
        topic = TopicFactory(collection=collection, number=topic_number)
        for position in (1, 2):
            TurnFactory(
                topic=topic, collection=collection, position=position, turn_id=f"{topic_number}_{position}"
            )
    return collection


def _trec(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode()


def test_it_refuses_a_run_with_a_duplicate_document_or_an_unknown_topic_naming_each(tmp_path, collection):
    path = tmp_path / "bad.run"
    path.write_bytes(
        _trec(
            [
                "1_1 Q0 d1 1 3.0 bm25",
                "1_1 Q0 d1 2 2.0 bm25",
                "9_9 Q0 d2 1 3.0 bm25",
                "1_2 Q0 d3 1 3.0 bm25",
            ]
        )
    )

    with pytest.raises(ImportFailed) as refused:
        run_import(path=path, collection=collection)

    problems = str(refused.value)
    assert "bad.run:2: document d1 ranked twice for 1_1" in problems
    assert "bad.run:3: turn 9_9 is not in collection camp" in problems
    assert not Run.objects.exists()


def test_it_keeps_what_a_run_was_accepted_with(tmp_path, collection):
    path = tmp_path / "short.run"
    path.write_bytes(
        _trec(
            [
                "1_1 Q0 a 1 3.0 bm25",
                "1_1 Q0 b 2 2.0 bm25",
                "1_1 Q0 c 3 1.0 bm25",
                "1_2 Q0 a 1 1.0 bm25",  # a lower rank with a higher score below
                "1_2 Q0 b 2 5.0 bm25",
                "2_1 Q0 a 1 1.0 bm25",  # only one document; 2_2 is not ranked at all
            ]
        )
    )

    [(run, _result)] = run_import(path=path, collection=collection)

    report = Run.objects.get(pk=run.pk).report
    assert report["depth_by_topic"] == {"1_1": 3, "1_2": 2, "2_1": 1}
    assert report["depth"] == {"min": 1, "median": 2, "max": 3}
    assert report["short_topics"] == ["1_2", "2_1"]
    assert report["missing_topics"] == ["2_2"]
    assert report["score_order_topics"] == ["1_2"]
    assert [check["name"] for check in report["checks"] if not check["ok"]] == [
        "Topics not covered",
        "Ranking depth per topic",
        "Ranks against scores",
    ]
    assert (
        report["warnings"][0]
        == "Topics not covered: 1 topic of the collection without a ranking or answer: 2_2"
    )


def test_it_counts_the_passages_an_ikat_response_gives_twice(tmp_path, collection):
    path = tmp_path / "run.json"
    provenance = [{"id": "a", "score": 3}, {"id": "b", "score": 2}, {"id": "a", "score": 1}]
    turns = [
        {"turn_id": t, "responses": [{"rank": 1, "text": "x", "passage_provenance": provenance}]}
        for t in ("1_1", "1_2", "2_1", "2_2")
    ]
    path.write_text(json.dumps({"run_name": "ikat", "run_type": "automatic", "turns": turns}))

    [(run, _result)] = run_import(path=path, collection=collection)

    report = Run.objects.get(pk=run.pk).report
    assert report["duplicates_dropped"] == {"1_1": 1, "1_2": 1, "2_1": 1, "2_2": 1}
    assert report["depth_by_topic"] == {"1_1": 2, "1_2": 2, "2_1": 2, "2_2": 2}
    assert report["warnings"] == [
        "Duplicate documents per topic: 4 passages given twice in a response of 4 topics (1_1, 1_2, 2_1, 2_2); "
        "the first was kept"
    ]


def test_the_upload_page_shows_the_runs_report(client, collection):
    client.force_login(OrganiserFactory())
    content = _trec(["1_1 Q0 a 1 3.0 <b>tag", "1_1 Q0 b 2 2.0 <b>tag", "1_2 Q0 a 1 1.0 <b>tag"])

    response = client.post(
        reverse("console-collection", args=[collection.name]),
        {"kind": "run", "file": SimpleUploadedFile("short.run", content)},
        follow=True,
    )

    assert response.status_code == 200
    assert ImportJob.objects.get().status == ImportJob.Status.DONE
    html = response.content.decode()
    assert "Validation of run &lt;b&gt;tag" in html
    assert "<b>tag" not in html
    assert "Accepted with 2 warnings." in html
    assert "2 topics of the collection without a ranking or answer: 2_1, 2_2" in html
    assert "1 topic ranked shallower than the run&#x27;s 2: 1_2" in html


def test_the_collection_page_links_the_judges_and_run_report_pages(client, collection):
    client.force_login(OrganiserFactory())

    response = client.get(reverse("console-collection", args=[collection.name]))

    html = response.content.decode()
    assert f'href="{reverse("judging:quality-judges", args=[collection.name])}" id="judges-page"' in html
    assert f'href="{reverse("judging:quality-runs", args=[collection.name])}" id="run-reports"' in html


def test_the_import_command_prints_the_warnings(tmp_path, collection):
    path = tmp_path / "short.run"
    path.write_bytes(_trec(["1_1 Q0 a 1 3.0 bm25", "1_1 Q0 b 2 2.0 bm25", "1_2 Q0 a 1 1.0 bm25"]))
    out = io.StringIO()

    call_command("import_run", str(path), collection=collection.name, stdout=out)

    assert (
        "  warning: Topics not covered: 2 topics of the collection without a ranking or answer: 2_1, 2_2"
        in (out.getvalue())
    )
    assert (
        "  warning: Ranking depth per topic: 1 topic ranked shallower than the run's 2: 1_2" in out.getvalue()
    )


def test_the_run_reports_page_shows_each_runs_checks_and_depth_span_not_each_topics_depth(
    tmp_path, client, collection
):
    path = tmp_path / "short.run"
    path.write_bytes(_trec(["1_1 Q0 a 1 3.0 bm25", "1_1 Q0 b 2 2.0 bm25", "1_2 Q0 a 1 1.0 bm25"]))
    run_import(path=path, collection=collection)
    client.force_login(OrganiserFactory())

    response = client.get(reverse("judging:quality-runs", args=[collection.name]))

    assert response.status_code == 200
    [shown] = response.context["runs"]
    assert shown.name == "bm25"
    assert shown.warnings == Run.objects.get().report["warnings"]
    assert shown.depth == {"min": 1, "median": 1.5, "max": 2}
    html = response.content.decode()
    assert "Accepted with 2 warnings." in html
    assert "Ranking depth per topic: min 1, median 1.5, max 2" in html
    # Each topic's depth grows with the topics times the runs: it stays in the report and the command's JSON.
    assert not hasattr(shown, "depth_by_topic")
    assert "<td>1_1</td>" not in html


def test_the_run_reports_page_shows_a_page_of_validations(tmp_path, client, collection, monkeypatch):
    monkeypatch.setattr("judging.quality.runs.views.RUNS_PER_PAGE", 1)
    for tag in ("alpha", "beta"):
        path = tmp_path / f"{tag}.run"
        path.write_bytes(_trec([f"1_1 Q0 a 1 3.0 {tag}"]))
        run_import(path=path, collection=collection)
    client.force_login(OrganiserFactory())

    response = client.get(reverse("judging:quality-runs", args=[collection.name]), {"page": 2})

    assert [run.name for run in response.context["runs"]] == ["beta"]
    assert 'id="run-report-pages"' in response.content.decode()
