"""A TREC RAG nugget campaign end to end, as an organiser runs it: cited answers, passages and qrels
imported from files; nugget lists written by the loopback LLM and post-edited by an assessor through the
pages' HTTP endpoints; vital/okay by the LLM and by people (from scratch and post-editing); assignments by
a person and by the LLM; then the scores checked against nuggetizer's and the agreement against
scikit-learn's and scipy's on the same labels."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse
from nuggetizer.core.metrics import calculate_global_metrics, calculate_nugget_scores
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from annotation.models import (
    Collection,
    Judge,
    Nugget,
    NuggetAssignment,
    NuggetEdit,
    NuggetImportanceJudgment,
    Response,
    TopicWork,
)
from annotation.services import judge_for_assessor
from devtools.openai_server import toy_responder
from judging.measures.rag_nuggets import SCORE_NAMES
from judging.scores.rag_nuggets import nugget_scores
from tests.factories import UserFactory
from tests.judging.helpers import run as run_command

pytestmark = pytest.mark.django_db

# Three questions, each with three relevant passages (grades 3, 2, 1: the LLM reads them in that order and
# makes a nugget of each one's first sentence) and one passage judged not relevant.
QUESTIONS = {
    "2024-1": (
        "how do bees make honey",
        [
            "Bees collect nectar from flowers with their tongues. They carry it home.",
            "Enzymes in the bee stomach turn nectar into honey. The change takes days.",
            "Worker bees fan their wings to evaporate water from honey. It thickens.",
            "Wasps never make honey. They hunt other insects.",
        ],
    ),
    "2024-2": (
        "why is the sky blue",
        [
            "Sunlight is scattered by molecules of nitrogen and oxygen in the air. Rayleigh described it.",
            "Blue light scatters more than red light because of its shorter wavelength. Violet too.",
            "At sunset light crosses more atmosphere and looks orange. Clouds glow.",
            "Clouds are white because droplets scatter every colour. Fog too.",
        ],
    ),
    "2024-3": (
        "what causes ocean tides",
        [
            "The moon's gravity pulls the oceans toward it. The earth turns beneath.",
            "The sun raises tides about half as strong as the moon's. Both add up.",
            "Spring tides happen when the sun and moon line up. Neap tides do not.",
            "Waves are mostly made by wind. Storms make big ones.",
        ],
    ),
}
# Each run's answer: which of the three relevant passages' first sentences it says, and how much of each
# (whole, the first half of its words, or nothing), so the LLM's assignment labels differ between runs.
RUNS = {
    "run-full": ("whole", "whole", "whole"),
    "run-most": ("whole", "whole", "half"),
    "run-some": ("whole", "half", None),
    "run-thin": ("half", None, None),
}
ORDER = ["not_support", "partial_support", "support"]


def _first_sentence(text: str) -> str:
    return text.split(". ")[0].rstrip(".")


def _answer(qid: str, plan: tuple[str | None, ...]) -> list[dict]:
    sentences = []
    for index, (passage, how) in enumerate(zip(QUESTIONS[qid][1], plan, strict=False)):
        words = _first_sentence(passage).split()
        if how is not None:
            kept = words if how == "whole" else words[: len(words) // 2]
            sentences.append({"text": " ".join(kept) + ".", "citations": [index]})
    sentences.append({"text": "That is the short of it.", "citations": []})
    return sentences


def _write_collection(tmp_path) -> dict[str, str]:
    """The TREC RAG files: answers JSONL of four runs, passages JSONL, qrels."""
    answers, passages, qrels = [], [], []
    for qid, (question, texts) in QUESTIONS.items():
        ids = [f"msmarco_v2.1_doc_{qid}#{i}" for i in range(len(texts))]
        for i, (pid, text) in enumerate(zip(ids, texts, strict=True)):
            passages.append(json.dumps({"id": pid, "text": text}))
            qrels.append(f"{qid} 0 {pid} {3 - i}")
        for run, plan in RUNS.items():
            answer = _answer(qid, plan)
            answers.append(
                json.dumps(
                    {
                        "run_id": run,
                        "topic_id": qid,
                        "topic": question,
                        "references": ids[:3],
                        "response_length": sum(len(s["text"].split()) for s in answer),
                        "answer": answer,
                    }
                )
            )
    files = {"answers": "answers.jsonl", "passages": "passages.jsonl", "qrels": "qrels.txt"}
    for kind, lines in (("answers", answers), ("passages", passages), ("qrels", qrels)):
        (tmp_path / files[kind]).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {kind: str(tmp_path / name) for kind, name in files.items()}


def _hand_out(step: str, user: str, source: str, *extra: str) -> list[TopicWork]:
    run_command(
        "assign_nugget_work", "--collection", "rag24", "--step", step, "--users", user,
        "--source-judge", source, *extra,
    )  # fmt: skip
    return list(
        TopicWork.objects.filter(user__username=user, kind=f"nugget-{step}").order_by("topic__number")
    )


def _page(work: TopicWork, index: int = 1) -> str:
    return reverse("rag-nuggets-page", args=[work.id, index])


def _list_of(judge: Judge, qid: str) -> list[Nugget]:
    return list(Nugget.objects.filter(judge=judge, turn__turn_id=qid).order_by("position"))


def _post_edit(client, alice, works: list[TopicWork], llm: Judge) -> None:
    """alice rewrites, deletes, adds and merges as the page's script sends them, then submits each list."""
    client.force_login(alice)
    edits = {
        "2024-1": lambda keys: [
            {"action": "rewrite", "key": keys[0], "text": "Bees collect nectar from flowers"},
            {"action": "delete", "key": keys[2]},
            {"action": "add", "after": keys[1], "text": "Bees store honey in wax combs"},
        ],
        "2024-2": lambda keys: [
            {"action": "merge", "keys": keys[:2], "text": "Air molecules scatter blue light more than red"}
        ],
        "2024-3": lambda keys: [],  # accepted as the LLM wrote it
    }
    for work in works:
        qid = work.topic.number
        assert client.get(_page(work)).status_code == 200
        keys = [n.key for n in _list_of(llm, qid)]
        for edit in edits[qid](keys):
            response = client.post(
                reverse("rag-nuggets-edit", args=[work.id, 1]),
                json.dumps({**edit, "time_spent_ms": 4000}),
                content_type="application/json",
            )
            assert response.status_code == 200, response.content
        response = client.post(_page(work), {"time_spent_ms": 30000})
        assert response.status_code == 302
        assert response["Location"] == reverse("rag-nuggets-work")


def _label_importance(client, user, works: list[TopicWork], choose) -> None:
    client.force_login(user)
    for work in works:
        nuggets = _list_of(work.source_judge, work.topic.number)
        assert client.get(_page(work)).status_code == 200
        fields = {f"label-{n.pk}": choose(i, n) for i, n in enumerate(nuggets)}
        response = client.post(_page(work), {**fields, "time_spent_ms": 9000})
        assert response.status_code == 302


def _label_assignments(client, user, works: list[TopicWork], machine: Judge) -> None:
    """A person who mostly agrees with the LLM's reading, and rates every third pair one level lower
    (never below not_support)."""
    client.force_login(user)
    machine_labels = {
        (a.response_id, a.nugget_id): a.label for a in NuggetAssignment.objects.filter(judge=machine)
    }
    pair = 0
    for work in works:
        nuggets = _list_of(work.source_judge, work.topic.number)
        answers = Response.objects.filter(turn__topic=work.topic).order_by("run__name")
        for index in range(1, answers.count() + 1):
            page = client.get(_page(work, index))
            assert page.status_code == 200
            answer = page.context["answer"]
            fields = {}
            for nugget in nuggets:
                label = machine_labels[answer.pk, nugget.pk]
                if pair % 3 == 0:
                    label = ORDER[max(ORDER.index(label) - 1, 0)]
                fields[f"label-{nugget.pk}"] = label
                pair += 1
            response = client.post(_page(work, index), {**fields, "time_spent_ms": 12000})
            assert response.status_code == 302


def _agreement(*args: str) -> dict:
    return json.loads(
        run_command("agreement", "--collection", "rag24", *args, "--format", "json", "--resamples", "20")
    )


def _pairs(model, judge: Judge, fields: tuple[str, str, str], **filters) -> dict:
    return {
        (a, b): label for a, b, label in model.objects.filter(judge=judge, **filters).values_list(*fields)
    }


def _nuggetizer_records(assigner: Judge, importance: Judge) -> list[dict]:
    """The assignments as nuggetizer's assignment records: per answer, the list's nuggets in order with
    the importance judge's label and the assigner's."""
    vital = dict(
        NuggetImportanceJudgment.objects.filter(judge=importance).values_list("nugget_id", "importance")
    )
    records = []
    for response in Response.objects.select_related("run", "turn").order_by("run__name", "turn__turn_id"):
        labels = dict(
            NuggetAssignment.objects.filter(judge=assigner, response=response).values_list(
                "nugget_id", "label"
            )
        )
        nuggets = Nugget.objects.filter(pk__in=labels).order_by("position")
        records.append(
            {
                "qid": response.turn.turn_id,
                "run_id": response.run.name,
                "nuggets": [
                    {"text": n.text, "importance": vital[n.pk], "assignment": labels[n.pk]} for n in nuggets
                ],
            }
        )
    return records


def test_it_runs_a_trec_rag_nugget_campaign_from_files_to_scores_and_agreement(client, fake_openai, tmp_path):
    fake_openai.responder = toy_responder
    Collection.objects.create(name="rag24")
    files = _write_collection(tmp_path)
    run_command("import_run", files["answers"], "--collection", "rag24")
    run_command("import_passages", files["passages"], "--collection", "rag24")
    run_command("import_qrels", files["qrels"], "--collection", "rag24", "--judge", "nist-qrels")

    # The LLM's nugget lists, from the relevant passages, best first.
    created = run_command(
        "judge", "nuggets-create", "--collection", "rag24", "--judge", "llm-nuggets",
        "--qrels-judge", "nist-qrels", "--window", "2",
    )  # fmt: skip
    assert "3 units (0 failed)" in created
    llm_nuggets = Judge.objects.get(name="llm-nuggets")
    assert [n.text for n in _list_of(llm_nuggets, "2024-1")] == [
        _first_sentence(text) for text in QUESTIONS["2024-1"][1][:3]
    ]

    # alice post-edits the lists through the edit page's JSON endpoint, as the browser sends them.
    alice = UserFactory(username="alice")
    _post_edit(client, alice, _hand_out("edit", "alice", "llm-nuggets"), llm_nuggets)
    edited = judge_for_assessor(user=alice)
    assert [n.text for n in _list_of(edited, "2024-1")] == [
        "Bees collect nectar from flowers",
        _first_sentence(QUESTIONS["2024-1"][1][1]),
        "Bees store honey in wax combs",
    ]
    assert [n.text for n in _list_of(edited, "2024-2")] == [
        "Air molecules scatter blue light more than red",
        _first_sentence(QUESTIONS["2024-2"][1][2]),
    ]
    assert [n.text for n in _list_of(edited, "2024-3")] == [n.text for n in _list_of(llm_nuggets, "2024-3")]
    assert NuggetEdit.objects.filter(user=alice).count() == 4
    assert TopicWork.objects.filter(user=alice, completed_at__isnull=False).count() == 3
    sizes = {qid: len(_list_of(edited, qid)) for qid in QUESTIONS}
    assert sizes == {"2024-1": 3, "2024-2": 2, "2024-3": 3}

    # Vital or okay: the LLM; bob from scratch; carol post-editing the LLM's labels (she changes the last).
    name = edited.name
    run_command(
        "judge", "importance", "--collection", "rag24", "--judge", "llm-vital", "--nuggets-judge", name
    )
    llm_vital = Judge.objects.get(name="llm-vital")
    bob, carol, dave = (UserFactory(username=u) for u in ("bob", "carol", "dave"))
    _label_importance(
        client, bob, _hand_out("importance", "bob", name), lambda i, n: "vital" if i < 2 else "okay"
    )
    llm_importance = _pairs(
        NuggetImportanceJudgment, llm_vital, ("nugget_id", "nugget__turn_id", "importance")
    )
    _label_importance(
        client,
        carol,
        _hand_out("importance", "carol", name, "--condition", "post-edit", "--machine-judge", "llm-vital"),
        lambda i, n: (
            {"vital": "okay", "okay": "vital"}[llm_importance[n.pk, n.turn_id]]
            if i == sizes[n.turn.turn_id] - 1
            else llm_importance[n.pk, n.turn_id]
        ),
    )
    assert NuggetImportanceJudgment.objects.filter(judge__user=bob, condition="scratch").count() == 8
    carols = NuggetImportanceJudgment.objects.filter(judge__user=carol, condition="post-edit")
    assert carols.count() == 8 and carols.filter(changed=True).count() == 3

    # Assignments: the LLM, and dave from scratch on the assignment pages, answer by answer.
    run_command(
        "judge", "assignment", "--collection", "rag24", "--judge", "llm-assign", "--nuggets-judge", name
    )
    llm_assign = Judge.objects.get(name="llm-assign")
    _label_assignments(client, dave, _hand_out("assignment", "dave", name), llm_assign)
    dave_judge = judge_for_assessor(user=dave)
    pairs = len(RUNS) * sum(sizes.values())
    assert NuggetAssignment.objects.filter(judge=llm_assign).count() == pairs
    assert NuggetAssignment.objects.filter(judge=dave_judge, condition="scratch").count() == pairs
    assert TopicWork.objects.filter(user=dave, completed_at__isnull=False).count() == 3

    # The scores, per answer and per run, are nuggetizer's on the same assignments.
    for assigner in (llm_assign, dave_judge):
        scores = json.loads(
            run_command(
                "nugget_scores", "--collection", "rag24", "--judge", assigner.name,
                "--importance-judge", "llm-vital", "--format", "json",
            )
        )  # fmt: skip
        records = _nuggetizer_records(assigner, llm_vital)
        assert len(scores["answers"]) == len(records) == len(RUNS) * len(QUESTIONS)
        expected = {
            (r["run_id"], r["qid"]): vars(calculate_nugget_scores(r["qid"], r["nuggets"])) for r in records
        }
        for answer in scores["answers"]:
            reference = expected[answer["run_id"], answer["qid"]]
            assert {k: answer[k] for k in SCORE_NAMES} == {k: reference[k] for k in SCORE_NAMES}
        for run in RUNS:
            reference = calculate_global_metrics([r for r in records if r["run_id"] == run])
            assert scores["runs"][run] == {k: reference[k] for k in SCORE_NAMES}
    llm_runs = nugget_scores(collection=Collection.objects.get(name="rag24"), judge=llm_assign)["runs"]
    # The fake's labels follow how much of each passage an answer says: the runs come out in that order.
    assert [llm_runs[r]["all_score"] for r in RUNS] == sorted(
        {llm_runs[r]["all_score"] for r in RUNS}, reverse=True
    )

    # Assignment agreement, person against LLM: kappa, weighted kappa and the confusion matrix.
    report = _agreement("--task", "nugget-assignment", "--judges", dave_judge.name, "llm-assign")
    fields = ("response_id", "nugget_id", "label")
    a, b = _pairs(NuggetAssignment, dave_judge, fields), _pairs(NuggetAssignment, llm_assign, fields)
    units = sorted(a)
    x, y = [a[u] for u in units], [b[u] for u in units]
    assert report["n"] == len(units) == pairs
    assert report["labels"] == ORDER
    assert report["cohen_kappa"] == pytest.approx(cohen_kappa_score(x, y, labels=ORDER))
    for weights in ("linear", "quadratic"):
        assert report[f"weighted_kappa_{weights}"] == pytest.approx(
            cohen_kappa_score(x, y, labels=ORDER, weights=weights)
        )
    assert report["confusion_matrix"] == confusion_matrix(x, y, labels=ORDER).tolist()
    assert 0 < report["cohen_kappa"] < 1

    # Importance agreement with the LLM, by condition: bob from scratch, carol post-editing.
    for person, condition in ((bob, "scratch"), (carol, "post-edit")):
        judge = judge_for_assessor(user=person)
        report = _agreement(
            "--task", "nugget-importance", "--judges", judge.name, "llm-vital", "--condition", condition
        )
        mine = _pairs(
            NuggetImportanceJudgment,
            judge,
            ("nugget_id", "nugget__turn_id", "importance"),
            condition=condition,
        )
        units = sorted(mine)
        x, y = [mine[u] for u in units], [llm_importance[u] for u in units]
        assert report["n"] == len(units) == 8
        assert report["cohen_kappa"] == pytest.approx(cohen_kappa_score(x, y, labels=["okay", "vital"]))
        assert report["confusion_matrix"] == confusion_matrix(x, y, labels=["okay", "vital"]).tolist()

    # Kendall's tau between the run rankings under the person's and the LLM's assignments.
    ranking = json.loads(
        run_command(
            "rank_agreement", "--collection", "rag24", "--measure", "nugget-all",
            "--judges", dave_judge.name, "llm-assign", "--format", "json",
        )
    )  # fmt: skip
    collection = Collection.objects.get(name="rag24")
    mine = nugget_scores(collection=collection, judge=dave_judge)["runs"]
    theirs = nugget_scores(collection=collection, judge=llm_assign)["runs"]
    runs = sorted(RUNS)
    assert ranking["n_runs"] == len(RUNS)
    assert ranking["kendall_tau_b"] == pytest.approx(
        kendalltau([mine[r]["all_score"] for r in runs], [theirs[r]["all_score"] for r in runs]).statistic
    )

    # Both written out in nuggetizer's shapes.
    nuggets_file, assignments_file = tmp_path / "nuggets.jsonl", tmp_path / "assignments.jsonl"
    run_command(
        "export_nuggets",
        "--collection",
        "rag24",
        "--judge",
        name,
        "--format",
        "nuggetizer",
        "-o",
        str(nuggets_file),
    )
    run_command(
        "export_nugget_assignments",
        "--collection",
        "rag24",
        "--judge",
        "llm-assign",
        "-o",
        str(assignments_file),
    )
    exported = [json.loads(line) for line in assignments_file.read_text().splitlines()]
    assert [len(json.loads(line)["nuggets"]) for line in nuggets_file.read_text().splitlines()] == [3, 2, 3]
    assert {r["run_id"] for r in exported} == set(RUNS) and len(exported) == len(RUNS) * len(QUESTIONS)
    # nuggetizer scoring the exported file gives the scores Assay gives the same labels (the file's
    # importance is the nugget judge's, here none: every nugget okay, so the vital scores are 0).
    from_file = {
        (r["run_id"], r["qid"]): vars(calculate_nugget_scores(r["qid"], r["nuggets"])) for r in exported
    }
    for answer in nugget_scores(collection=collection, judge=llm_assign)["answers"]:
        reference = from_file[answer["run_id"], answer["qid"]]
        assert {k: answer[k] for k in SCORE_NAMES} == {k: reference[k] for k in SCORE_NAMES}
