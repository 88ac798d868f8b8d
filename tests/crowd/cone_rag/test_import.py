"""Import of the CONE-RAG crowd study's files: participants' responses and the crowd's NtR labels."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from annotation.formats.base import ImportFailed
from annotation.models import Judge, NtrJudgment, Response, Run
from console.models import ImportJob
from crowd.cone_rag.io import parse_labels
from tests.crowd.crowd_helpers import build_campaign
from tests.factories import (
    JudgeFactory,
    OrganiserFactory,
    ResponseFactory,
    ResponseSentenceFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
)

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "crowd"
RESPONSES = FIXTURES / "responses.cone-rag.json"
LABELS = FIXTURES / "labels.cone-rag.tsv"
ALIASES = ["A=alpha-run", "B=beta_run_2"]


@pytest.fixture
def collection():
    topic = TopicFactory(number="3")
    for position in (1, 2):
        TurnFactory(topic=topic, collection=topic.collection, position=position)
    return topic.collection


@pytest.fixture
def gold(collection):
    call_command(
        "import_nuggets",
        str(FIXTURES / "gold_nuggets.cone-rag.json"),
        collection=collection.name,
        judge="gold-human",
        fmt="cone-rag",
        stdout=StringIO(),
    )
    return Judge.objects.get(name="gold-human")


def _responses(collection) -> dict[tuple[str, str], str]:
    return {
        (r.turn.turn_id, r.run.name): r.text
        for r in Response.objects.filter(run__collection=collection).select_related("run", "turn")
    }


def _file_responses() -> dict[tuple[str, str], str]:
    data = json.loads(RESPONSES.read_text())
    return {(turn, run): text for turn, runs in data.items() for run, text in runs.items()}


def _file_labels() -> dict[tuple[str, str, str], bool]:
    """(turn id, nugget key, run name) -> label, read with plain string handling."""
    runs = dict(a.split("=") for a in ALIASES)
    labels = {}
    for line in LABELS.read_text().splitlines():
        key, value = line.split("\t")
        _batch, topic, turn, index, alias = key.split("_")
        labels[(f"{topic}_{turn}", f"[{index}]", runs[alias])] = value == "1"
    return labels


def _stored_labels(judge_name: str) -> dict[tuple[str, str, str], bool]:
    return {
        (j.nugget.turn.turn_id, j.nugget.key, j.response.run.name): j.matched
        for j in NtrJudgment.objects.filter(judge__name=judge_name).select_related(
            "nugget__turn", "response__run"
        )
    }


# --- responses -------------------------------------------------------------------------------------


def test_it_imports_responses_as_generation_only_runs(collection):
    out = StringIO()
    call_command("import_cone_rag_responses", str(RESPONSES), collection=collection.name, stdout=out)

    assert "4 created" in out.getvalue()
    assert _responses(collection) == _file_responses()
    runs = Run.objects.filter(collection=collection)
    assert sorted(runs.values_list("name", flat=True)) == ["alpha-run", "beta_run_2"]
    assert set(runs.values_list("kind", flat=True)) == {Run.Kind.GENERATION_ONLY}
    assert set(Response.objects.values_list("rank", flat=True)) == {1}


def test_importing_the_same_responses_twice_changes_nothing(collection):
    call_command("import_cone_rag_responses", str(RESPONSES), collection=collection.name, stdout=StringIO())
    before = sorted(Response.objects.values_list("id", "run_id", "turn_id", "text"))
    out = StringIO()
    call_command("import_cone_rag_responses", str(RESPONSES), collection=collection.name, stdout=out)

    assert "0 created, 0 updated, 4 unchanged" in out.getvalue()
    assert sorted(Response.objects.values_list("id", "run_id", "turn_id", "text")) == before
    assert Run.objects.filter(collection=collection).count() == 2


def test_it_keeps_an_existing_runs_kind_and_updates_a_changed_response_in_place(collection):
    run = RunFactory(collection=collection, name="alpha-run", kind=Run.Kind.AUTOMATIC)
    turn = collection.turns.get(turn_id="3_1")
    old = ResponseFactory(run=run, turn=turn, text="An older answer.")
    ResponseSentenceFactory(response=old, index=0, text="An older answer.")

    call_command("import_cone_rag_responses", str(RESPONSES), collection=collection.name, stdout=StringIO())

    old.refresh_from_db()
    assert old.text == _file_responses()[("3_1", "alpha-run")]
    assert not old.sentences.exists()  # they split the old text
    run.refresh_from_db()
    assert run.kind == Run.Kind.AUTOMATIC


def test_it_rejects_responses_for_a_turn_the_collection_lacks_with_its_line(collection):
    collection.turns.get(turn_id="3_2").delete()

    with pytest.raises(CommandError) as caught:
        call_command("import_cone_rag_responses", str(RESPONSES), collection=collection.name)

    assert f"{RESPONSES}:6: turn 3_2 is not in collection" in str(caught.value)
    assert not Response.objects.exists()
    assert not Run.objects.exists()


def test_it_rejects_a_malformed_responses_file_naming_every_bad_line(collection):
    bad = FIXTURES / "responses_bad.cone-rag.json"

    with pytest.raises(CommandError) as caught:
        call_command("import_cone_rag_responses", str(bad), collection=collection.name)

    message = str(caught.value)
    assert f"{bad}:4: turn 3_1, run beta_run_2: response must be a string, not int" in message
    assert f"{bad}:8: turn 3_2: empty run name" in message
    assert not Run.objects.exists()


def test_it_rejects_a_responses_file_that_is_not_json_with_its_line(collection, tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text('{\n  "3_1": {\n    "alpha-run": "x",\n  }\n}\n')

    with pytest.raises(CommandError, match=rf"{broken}:4: invalid JSON"):
        call_command("import_cone_rag_responses", str(broken), collection=collection.name)


def test_it_rejects_an_unknown_collection():
    with pytest.raises(CommandError, match="no collection named 'nope'"):
        call_command("import_cone_rag_responses", str(RESPONSES), collection="nope")


# --- labels ----------------------------------------------------------------------------------------


@pytest.fixture
def responses(collection, gold):
    call_command("import_cone_rag_responses", str(RESPONSES), collection=collection.name, stdout=StringIO())


def _import_labels(collection, path=LABELS, aliases=ALIASES, judge="mturk-majority", **kwargs):
    out = StringIO()
    call_command(
        "import_cone_rag_labels",
        str(path),
        collection=collection.name,
        nugget_judge="gold-human",
        judge=judge,
        alias=aliases,
        stdout=out,
        **kwargs,
    )
    return out.getvalue()


def test_it_imports_labels_as_judgments_of_the_crowd_judge(collection, responses):
    out = _import_labels(collection)

    assert "10 created, 0 updated, 0 unchanged" in out
    assert _stored_labels("mturk-majority") == _file_labels()
    judge = Judge.objects.get(name="mturk-majority")
    assert judge.kind == Judge.Kind.CROWD


def test_it_says_which_run_each_alias_labelled_in_its_output_and_the_judge(collection, responses):
    out = _import_labels(collection, aliases=[*ALIASES, "C=alpha-run"])

    lines = out.splitlines()
    assert lines[0].endswith("labels of mturk-majority: 10 created, 0 updated, 0 unchanged")
    assert lines[1:] == [
        "  NtR labels, alias A → run alpha-run: 5 created, 0 updated, 0 unchanged",
        "  NtR labels, alias B → run beta_run_2: 5 created, 0 updated, 0 unchanged",
        # Mapped but never used by the file: said, not hidden.
        "  NtR labels, alias C → run alpha-run: 0 created, 0 updated, 0 unchanged",
    ]
    judge = Judge.objects.get(name="mturk-majority")
    assert judge.description == (
        "Crowd NtR labels imported from labels.cone-rag.tsv; run aliases: "
        "A = alpha-run, B = beta_run_2, C = alpha-run"
    )
    assert _stored_labels("mturk-majority") == _file_labels()


def test_the_upload_page_shows_the_run_of_each_alias(client, collection, responses):
    client.force_login(OrganiserFactory())

    page = client.post(
        reverse("console-collection", args=[collection.name]),
        {
            "kind": ImportJob.Kind.CONE_RAG_LABELS,
            "file": SimpleUploadedFile("labels.tsv", LABELS.read_bytes()),
            "nugget_judge": "gold-human",
            "aliases": "\n".join(ALIASES),
        },
        follow=True,
    )

    assert page.status_code == 200
    html = page.content.decode()
    assert "<td>NtR labels, alias A → run alpha-run</td><td>5</td>" in html
    assert "<td>NtR labels, alias B → run beta_run_2</td><td>5</td>" in html
    assert [(row["kind"], row["created"]) for row in ImportJob.objects.get().result] == [
        ("NtR labels, alias A → run alpha-run", 5),
        ("NtR labels, alias B → run beta_run_2", 5),
    ]
    assert NtrJudgment.objects.filter(judge__name="mturk-majority").count() == 10


def test_importing_the_same_labels_twice_changes_nothing(collection, responses):
    _import_labels(collection)
    before = sorted(NtrJudgment.objects.values_list("id", "response_id", "nugget_id", "matched"))

    out = _import_labels(collection)

    assert "0 created, 0 updated, 10 unchanged" in out
    assert sorted(NtrJudgment.objects.values_list("id", "response_id", "nugget_id", "matched")) == before


def test_imported_labels_feed_the_nugget_recall_of_runs(collection, responses):
    _import_labels(collection)
    out = StringIO()
    call_command(
        "nugget_metrics",
        collection=collection.name,
        gold_judge="gold-human",
        ntr_judge="mturk-majority",
        format="json",
        stdout=out,
    )
    report = json.loads(out.getvalue())

    labels = _file_labels()
    for run in ("alpha-run", "beta_run_2"):
        # Recall per turn (matched / gold nuggets), averaged over the two turns.
        per_turn = [
            sum(v for (t, _, r), v in labels.items() if t == turn and r == run)
            / sum(1 for (t, _, r) in labels if t == turn and r == run)
            for turn in ("3_1", "3_2")
        ]
        row = next(r for r in report["runs"] if r["run"] == run)
        assert row["all"]["recall"] == pytest.approx(sum(per_turn) / 2)


def test_it_rejects_malformed_label_lines_with_their_line_numbers(collection, responses):
    bad = FIXTURES / "labels_bad_syntax.cone-rag.tsv"

    with pytest.raises(CommandError) as caught:
        _import_labels(collection, path=bad)

    message = str(caught.value)
    assert f"{bad}:2: label 'yes' must be 0 or 1" in message
    assert f"{bad}:3: key '1-3-1-2-B' is not <batch>_<topic>_<turn>_<nuggetIndex>_<runAlias>" in message
    assert f"{bad}:4: nugget index '0' must be a positive integer" in message
    assert f"{bad}:6: 2_3_1_3_B: contradicts the label of the same pair on line 5" in message
    assert f"{bad}:1:" not in message
    assert not NtrJudgment.objects.exists()
    assert not Judge.objects.filter(name="mturk-majority").exists()


def test_it_rejects_labels_naming_what_the_collection_lacks_with_their_line_numbers(collection, responses):
    bad = FIXTURES / "labels_bad_refs.cone-rag.tsv"

    with pytest.raises(CommandError) as caught:
        _import_labels(collection, path=bad)

    message = str(caught.value)
    assert f"{bad}:2: turn 3_1 has no nugget [4] of judge gold-human" in message
    assert f"{bad}:3: run alias 'C' is not mapped: add --alias C=RUN" in message
    assert f"{bad}:4: turn 9_9 is not in collection" in message
    assert f"{bad}:1:" not in message and f"{bad}:5:" not in message
    assert not NtrJudgment.objects.exists()


def test_it_rejects_labels_of_a_run_without_a_response_for_the_turn(collection, gold):
    RunFactory(collection=collection, name="alpha-run")
    RunFactory(collection=collection, name="beta_run_2")

    with pytest.raises(CommandError) as caught:
        _import_labels(collection)

    assert f"{LABELS}:1: run alpha-run has no response for turn 3_1 (import the responses first)" in str(
        caught.value
    )
    assert not NtrJudgment.objects.exists()


@pytest.mark.parametrize(
    "aliases, message",
    [
        (["A=alpha-run", "B"], "--alias 'B' is not ALIAS=RUN_NAME"),
        (["A=alpha-run", "A=beta_run_2"], "alias 'A' is given twice"),
        (["A=alpha-run", "B=no-such-run"], "--alias B=no-such-run: no run named 'no-such-run'"),
        ([], "give at least one --alias"),
    ],
)
def test_it_rejects_bad_alias_mappings(collection, responses, aliases, message):
    with pytest.raises(CommandError, match=message):
        _import_labels(collection, aliases=aliases)
    assert not NtrJudgment.objects.exists()


def test_it_refuses_to_file_labels_under_a_judge_that_is_not_a_crowd_judge(collection, responses):
    JudgeFactory(name="gpt-4o-ntr", kind=Judge.Kind.LLM)

    with pytest.raises(CommandError, match="not a crowd judge"):
        _import_labels(collection, judge="gpt-4o-ntr")
    assert not NtrJudgment.objects.exists()


def test_it_rejects_an_unknown_nugget_judge(collection, responses):
    with pytest.raises(CommandError, match="no judge named 'gold-human-2'"):
        call_command(
            "import_cone_rag_labels",
            str(LABELS),
            collection=collection.name,
            nugget_judge="gold-human-2",
            alias=ALIASES,
        )


# --- names -----------------------------------------------------------------------------------------


def test_it_rejects_run_names_pages_cannot_address_with_their_lines(collection, tmp_path):
    names = {"..": "is not a name", "a/b": "contains '/'", "a\tb": "U+0009", "a\nb": "U+000A"}
    path = tmp_path / "responses.json"
    path.write_text(
        json.dumps({"3_1": {**{name: "An answer." for name in names}, "fine-run": "x"}}, indent=4)
    )

    with pytest.raises(CommandError) as caught:
        call_command("import_cone_rag_responses", str(path), collection=collection.name)

    message = str(caught.value)
    for line, problem in enumerate(names.values(), start=3):
        assert f"{path}:{line}: run name" in message
        assert problem in message
    assert not Run.objects.exists()
    assert not Response.objects.exists()


def _upload_labels(client, collection, judge: str):
    client.force_login(OrganiserFactory())
    return client.post(
        reverse("console-collection", args=[collection.name]),
        {
            "kind": ImportJob.Kind.CONE_RAG_LABELS,
            "file": SimpleUploadedFile("labels.tsv", LABELS.read_bytes()),
            "nugget_judge": "gold-human",
            "judge": judge,
            "aliases": "\n".join(ALIASES),
        },
        follow=True,
    )


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("assessor:carol", "judge names starting with &#x27;assessor:&#x27; are kept for assessors"),
        ("crowd/majority", "contains &#x27;/&#x27;"),
        ("crowd\tmajority", "contains the control character U+0009"),
        ("..", "is not a name"),
    ],
)
def test_the_labels_upload_refuses_a_name_a_judge_may_not_have(client, collection, responses, name, reason):
    page = _upload_labels(client, collection, name)

    assert page.status_code == 200
    assert reason in page.content.decode()
    assert ImportJob.objects.get().status == ImportJob.Status.FAILED
    assert not Judge.objects.filter(name=name).exists()
    assert not NtrJudgment.objects.exists()


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("crowd-majority", "holds the majority of the platform&#x27;s own crowd campaigns"),
        ("crowd-worker:w1", "hold one crowd worker&#x27;s own votes"),
        ("mturk-worker:A1B2", "hold one crowd worker&#x27;s own votes"),
    ],
)
def test_the_labels_upload_refuses_a_crowd_campaigns_own_judges(client, collection, responses, name, reason):
    JudgeFactory(name=name, kind=Judge.Kind.CROWD)

    page = _upload_labels(client, collection, name)

    assert page.status_code == 200
    assert reason in page.content.decode()
    assert ImportJob.objects.get().status == ImportJob.Status.FAILED
    assert not NtrJudgment.objects.exists()


def test_the_labels_command_refuses_the_majority_judge_of_a_campaign(collection, responses):
    campaign = build_campaign()

    with pytest.raises(CommandError, match=f"holds the majority of crowd campaign '{campaign.name}'"):
        _import_labels(collection, judge=campaign.label_judge.name)

    assert not NtrJudgment.objects.filter(judge=campaign.label_judge).exists()


def test_the_labels_upload_needs_the_alias_lines_crowd_registered(client, collection, responses):
    client.force_login(OrganiserFactory())

    page = client.post(
        reverse("console-collection", args=[collection.name]),
        {
            "kind": ImportJob.Kind.CONE_RAG_LABELS,
            "file": SimpleUploadedFile("labels.tsv", LABELS.read_bytes()),
            "nugget_judge": "gold-human",
        },
    )

    assert page.status_code == 400
    assert "a cone-rag crowd labels upload needs this" in page.content.decode()
    assert not ImportJob.objects.exists()


def test_it_reports_a_nugget_index_of_digits_int_cannot_read(tmp_path):
    path = tmp_path / "labels.tsv"
    path.write_text("1_3_1_²_A\t1\n", encoding="utf-8")

    with pytest.raises(ImportFailed, match="nugget index '²' must be a positive integer"):
        parse_labels(path)
