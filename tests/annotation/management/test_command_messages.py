"""What the commands say to a user who mistyped a name, rebuilt a pool, piped into head, or has one of a thing."""

from __future__ import annotations

import subprocess
import sys
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.conftest import REPO
from tests.factories import (
    CollectionFactory,
    JudgeFactory,
    PassageFactory,
    PoolFactory,
    RankingFactory,
    RelevanceJudgmentFactory,
    RunFactory,
    TurnFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


def test_an_unknown_collection_is_named_with_the_known_ones():
    CollectionFactory(name="ikat2024")
    CollectionFactory(name="demo")

    with pytest.raises(
        CommandError, match=r"^no collection named 'ikat24'; known collections: demo, ikat2024$"
    ):
        call_command("export_qrels", "--collection", "ikat24", "--judge", "nist-qrels")


def test_crowd_compose_names_an_unknown_collection_and_judge_instead_of_the_orm_error():
    CollectionFactory(name="demo")
    JudgeFactory(name="demo-gold-nuggets")
    args = ["--campaign", "c1", "--runs", "all", "--turns", "all", "--provider", "platform"]

    with pytest.raises(CommandError, match=r"^no collection named 'ikat24'; known collections: demo$"):
        call_command("crowd_compose", *args, "--collection", "ikat24", "--nugget-judge", "demo-gold-nuggets")
    with pytest.raises(CommandError, match=r"^no judge named 'gold'; known judges: demo-gold-nuggets$"):
        call_command("crowd_compose", *args, "--collection", "demo", "--nugget-judge", "gold")


def test_an_unknown_campaign_pool_and_user_are_named_with_the_known_ones():
    collection = CollectionFactory(name="demo")
    PoolFactory(collection=collection, name="top10")
    UserFactory(username="alice")
    UserFactory(username="gone", is_active=False)

    with pytest.raises(CommandError, match=r"^no crowd campaign named 'c1'; no crowd campaigns yet$"):
        call_command("crowd_report", "--campaign", "c1")
    with pytest.raises(CommandError, match=r"^no pool named 'top20' in demo; known pools: top10$"):
        call_command(
            "assign_work", "--collection", "demo", "--pool", "top20", "--name", "r1", "--assessors", "alice"
        )
    with pytest.raises(CommandError, match=r"^no such users: carol; known users: alice$"):
        call_command(
            "assign_work", "--collection", "demo", "--pool", "top10", "--name", "r1", "--assessors", "carol"
        )
    with pytest.raises(CommandError, match=r"^no user named 'gone'; known users: alice$"):
        call_command("assign_support", "--collection", "demo", "--assessor", "gone", "--condition", "scratch")


def test_a_long_list_of_names_is_cut_with_the_total():
    for n in range(12):
        CollectionFactory(name=f"c{n:02d}")

    with pytest.raises(CommandError, match=r"known collections: c00, c01, .*, c09, \.\.\. \(12 in all\)$"):
        call_command("export_qrels", "--collection", "nope", "--judge", "j")


def test_build_pool_says_to_rebuild_with_the_replace_flag():
    collection = CollectionFactory(name="demo")
    RankingFactory(run=RunFactory(collection=collection), turn=TurnFactory(topic__collection=collection))
    call_command("build_pool", "--collection", "demo", "--name", "top10", "--depth", "10", stdout=StringIO())

    with pytest.raises(CommandError, match=r"pool 'top10' already exists in demo: rebuild it with --replace"):
        call_command("build_pool", "--collection", "demo", "--name", "top10", "--depth", "10")


def test_one_run_one_turn_and_one_topic_are_singular():
    collection = CollectionFactory(name="demo")
    turn = TurnFactory(topic__collection=collection)
    passages = [PassageFactory(collection=collection) for _ in range(4)]
    RankingFactory(
        run=RunFactory(collection=collection, name="bm25"),
        turn=turn,
        passage_ids=[p.passage_id for p in passages],
    )
    a, b = JudgeFactory(name="a"), JudgeFactory(name="b")
    for passage, (grade_a, grade_b) in zip(passages, [(0, 0), (1, 1), (2, 3), (3, 3)], strict=True):
        RelevanceJudgmentFactory(judge=a, turn=turn, passage_id=passage.passage_id, grade=grade_a)
        RelevanceJudgmentFactory(judge=b, turn=turn, passage_id=passage.passage_id, grade=grade_b)
    evaluation, agreement = StringIO(), StringIO()

    call_command("evaluate_runs", "--collection", "demo", "--judge", "a", stdout=evaluation)
    call_command(
        "agreement", "--collection", "demo", "--task", "relevance", "--judges", "a", "b", stdout=agreement
    )

    assert evaluation.getvalue().startswith("demo: 1 run on the 1 turn judged by a;")
    # One topic gives no bootstrap interval over topics; the report says so in the singular.
    assert "Only one topic: no bootstrap interval over topics" in agreement.getvalue()
    assert "1 topics" not in agreement.getvalue()


def test_a_closed_pipe_ends_a_command_quietly():
    # The reader is gone before the command writes, as when `head` has read its lines.
    command = subprocess.Popen(
        [sys.executable, str(REPO / "manage.py"), "diffsettings", "--all"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    assert command.stdout is not None and command.stderr is not None
    command.stdout.close()
    errors = command.stderr.read().decode()
    command.wait(timeout=30)

    assert command.returncode == 141
    assert errors == ""
