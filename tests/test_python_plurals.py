"""Counts in the messages Python builds agree with their noun: "1 unit", "2 units", never "1 units"."""

from __future__ import annotations

import ast
import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.relevance.pooling import unfiltered_text
from core.wording import plural
from judging.machine.jobs.start import Estimate
from judging.machine.jobs.state import job_status_text
from judging.models import JudgeJob
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    NuggetFactory,
    OrganiserFactory,
    ResponseFactory,
    RunFactory,
    TopicFactory,
    TurnFactory,
)

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("core", "annotation", "judging", "crowd", "console", "devtools", "assay")

# The nouns messages count; a printed value right before one of them in its plural is a count that does
# not agree when it is 1 (an adjective may stand between: "1 drawn units").
NOUNS = (
    "assessor|assignment|attempt|batch|bonus|call|citation|conversation|day|disagreement|entry|grade|HIT|judge"
    "|judgment|label|minute|nugget|pair|passage|pool|question|repeat|response|run|sample|second|sentence"
    "|statement|topic|turn|unit|vote|worker"
)
PLURAL_AFTER = re.compile(r"^\s+(?:[a-z-]+\s+)?(?:" + NOUNS + r")(?:e?s)\b")
# Printed values that are not counts, or counts that are never one.
NOT_COUNTS = {
    ("annotation/management/commands/import_ikat.py", "year"),  # "iKAT 2024 test topics"
    ("annotation/support/disagreements.py", "assessor.get_username()"),  # "olga judges topic 3"
    ("judging/management/commands/support_disagreements.py", "condition"),  # a table's row label
    ("judging/agreement/reports/comparison.py", "task"),  # "relevance units in collection ..."
    ("crowd/management/commands/crowd_report.py", "report.bonus_total"),  # an amount of money
    ("crowd/providers/links/selectors.py", "age"),
    ("annotation/rag_nuggets/services.py", "MAX_NUGGETS"),  # the longest list: many
    ("annotation/rag_nuggets/services.py", "step"),  # "importance labels": a kind of label
    ("judging/machine/jobs/rag_nuggets.py", "turn.turn_id"),  # a window's name: "12_3 nuggets 1-10"
    ("judging/machine/jobs/rag_nuggets.py", "response.rank"),  # "run#1 nuggets 1-10"
    ("judging/machine/rag_nuggets.py", "what"),  # "several importance labels": a kind of label
    ("judging/measures/topic_agreement.py", "MIN_TOPIC_RUNS"),  # a constant, never one: "fewer than 3 runs"
    ("judging/management/commands/nugget_calibration.py", "b.judge.name"),  # "llm-b assigned nuggets"
    (
        "judging/management/commands/simulate_budget.py",
        "design",
    ),  # "stratified pairs"  # the link lifetime setting, in seconds: days long
    (
        "judging/agreement/reports/charts.py",
        "report['n_runs']",
    ),  # a rank correlation's chart: three runs or more
}


def _agrees(expression: ast.expr) -> bool:
    """A value printed through `plural` carries its own noun."""
    return isinstance(expression, ast.Call) and getattr(expression.func, "id", "") == "plural"


def _counts_before_plural_nouns() -> list[str]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            name = path.relative_to(ROOT).as_posix()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.JoinedStr):
                    continue
                for value, after in zip(node.values, node.values[1:], strict=False):
                    if (
                        isinstance(value, ast.FormattedValue)
                        and not _agrees(value.value)
                        and isinstance(after, ast.Constant)
                        and PLURAL_AFTER.match(after.value)
                        and (name, ast.unparse(value.value)) not in NOT_COUNTS
                    ):
                        found.append(
                            f"{name}:{node.lineno}: {{{ast.unparse(value.value)}}}{after.value[:30]}"
                        )
    return found


def test_it_finds_no_count_printed_before_a_fixed_plural_noun():
    assert _counts_before_plural_nouns() == []


def test_the_check_sees_a_count_before_a_plural_noun():
    tree = ast.parse('f"{n} drawn units"')
    [node] = [n for n in ast.walk(tree) if isinstance(n, ast.JoinedStr)]
    assert PLURAL_AFTER.match(node.values[1].value)


@pytest.mark.parametrize(
    ("count", "noun", "text"),
    [
        (1, "unit", "1 unit"),
        (2, "unit", "2 units"),
        (0, "unit", "0 units"),
        (1, "batch", "1 batch"),
        (2, "batch", "2 batches"),
        (2, "bonus", "2 bonuses"),
        (2, "entry", "2 entries"),
        (2, "day", "2 days"),
        (2, "HIT", "2 HITs"),
        (2, "drawn turn", "2 drawn turns"),
        (2, "analysis", "2 analyses"),
    ],
)
def test_it_makes_the_noun_agree_with_its_count(count, noun, text):
    many = "analyses" if noun == "analysis" else None
    assert plural(count, noun, many) == text


@pytest.mark.parametrize(
    ("units", "text"),
    [
        (1, "1 unit: 1 call to make, 0 answered from the cache; about 10 input and 1 output token"),
        (2, "2 units: 2 calls to make, 0 answered from the cache; about 10 input and 2 output tokens"),
    ],
)
def test_a_job_estimate_agrees_with_its_counts(units, text):
    estimate = Estimate(
        units=units,
        calls=units,
        cached=0,
        input_tokens=10,
        output_tokens=units,
        cost_usd=0.0,
        skipped=units,
        priced=True,
    )

    assert str(estimate).startswith(text)
    assert str(estimate).endswith(f"; {units} unit{'s' if units > 1 else ''} skipped")


@pytest.mark.parametrize(("failed", "text"), [(1, "done, 1 unit failed"), (2, "done, 2 units failed")])
def test_a_job_status_agrees_with_its_failures(failed, text):
    job = JudgeJob(status=JudgeJob.Status.DONE, units_total=5, units_done=5, units_failed=failed)

    assert job_status_text(job) == text


def test_the_unfiltered_pool_sentence_agrees_at_one_and_two():
    assert unfiltered_text(1, ["1_1"]).startswith("1 deeper pair in 1 turn entered unfiltered")
    assert unfiltered_text(2, ["1_1", "1_2"]).startswith("2 deeper pairs in 2 turns entered unfiltered")


@pytest.mark.django_db
@pytest.mark.parametrize(("lines", "said"), [(1, "has 1 topic, 1 turn"), (2, "has 2 topics, 2 turns")])
def test_the_topics_command_agrees_with_its_counts(tmp_path, lines, said):
    CollectionFactory(name="plurals")
    path = tmp_path / "topics.tsv"
    path.write_text("".join(f"{i}\tquery {i}\n" for i in range(1, lines + 1)), encoding="utf-8")
    out = StringIO()

    call_command("import_topics", str(path), collection="plurals", stdout=out)

    assert f"collection plurals {said}\n" in out.getvalue()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("batch_size", "said"), [(2, "Campaign web: 1 batch."), (1, "Campaign web: 2 batches.")]
)
def test_the_crowd_compose_page_agrees_with_its_batch_count(client, batch_size, said):
    collection = CollectionFactory(name="demo")
    gold = JudgeFactory(name="gold")
    run = RunFactory(collection=collection, name="run-a")
    turn = TurnFactory(topic=TopicFactory(collection=collection), collection=collection)
    ResponseFactory(run=run, turn=turn)
    NuggetFactory.create_batch(2, judge=gold, turn=turn)
    client.force_login(OrganiserFactory())
    form = {"collection": "demo", "name": "web", "provider": "platform", "nugget_judge": "gold", "seed": 1}
    form |= {
        "batch_size": batch_size,
        "tests_per_batch": 0,
        "generate_tests": 0,
        "assignments": 1,
        "reward": "0.50",
    }

    response = client.post(reverse("crowd:campaign-new"), form, follow=True)

    assert response.status_code == 200
    assert said in response.content.decode()
