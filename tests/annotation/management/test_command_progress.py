"""Long commands show their progress on stderr: a bar on a terminal, lines at --verbosity 2, nothing at 0
or on a pipe at the default verbosity."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import OutputWrapper

from annotation.collection import rankings as collection_rankings
from annotation.models import PoolEntry, Ranking
from core.progress import CommandProgress
from tests.factories import CollectionFactory, RankingFactory, RunFactory, TopicFactory, TurnFactory

pytestmark = pytest.mark.django_db


class Terminal(StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def every_step(monkeypatch):
    """Show every step, so a test sees one line per chunk or turn instead of one per second."""
    monkeypatch.setattr(CommandProgress, "LINE_EVERY_S", 0.0)
    monkeypatch.setattr(CommandProgress, "BAR_EVERY_S", 0.0)


@pytest.fixture
def collection():
    collection = CollectionFactory(name="prog")
    topic = TopicFactory(collection=collection, number="7")
    for position in (1, 2, 3):
        TurnFactory(topic=topic, position=position)
    return collection


@pytest.fixture
def run_file(tmp_path):
    path = tmp_path / "bm25.run"
    path.write_text("".join(f"7_{t} Q0 d{t}-{r} {r} {10 - r} bm25\n" for t in (1, 2, 3) for r in (1, 2)))
    return path


def import_run(path, verbosity: int) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("import_run", str(path), collection="prog", verbosity=verbosity, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_import_run_shows_a_line_per_chunk_of_rankings_at_verbosity_2(
    collection, run_file, every_step, monkeypatch
):
    monkeypatch.setattr(collection_rankings, "RANKING_CHUNK", 2)

    out, err = import_run(run_file, verbosity=2)

    assert "run bm25" in out
    assert err.splitlines() == ["2/3 rankings and responses stored", "3/3 rankings and responses stored"]
    assert Ranking.objects.filter(run__name="bm25").count() == 3


def test_import_run_re_import_reports_the_unchanged_rankings_at_once(collection, run_file, every_step):
    import_run(run_file, verbosity=0)

    _, err = import_run(run_file, verbosity=2)

    assert err.splitlines() == ["3/3 rankings and responses stored"]


@pytest.mark.parametrize("verbosity", [0, 1])
def test_import_run_shows_nothing_on_a_pipe_below_verbosity_2(collection, run_file, every_step, verbosity):
    out, err = import_run(run_file, verbosity=verbosity)

    assert err == ""
    assert "run bm25: rankings: 3 created, 0 updated, 0 unchanged" in out
    assert Ranking.objects.filter(run__name="bm25").count() == 3


def build_pool(verbosity: int) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("build_pool", collection="prog", depth=5, verbosity=verbosity, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def ranked(collection):
    run = RunFactory(collection=collection, name="bm25")
    for turn in collection.turns.all():
        RankingFactory(run=run, turn=turn, passage_ids=["p1", "p2"])
    return collection


def test_build_pool_shows_a_line_per_turn_at_verbosity_2(ranked, every_step):
    out, err = build_pool(verbosity=2)

    assert "pool depth5: 6 pairs over 3 turns" in out
    assert err.splitlines() == ["1/3 turns pooled", "2/3 turns pooled", "3/3 turns pooled"]
    assert PoolEntry.objects.filter(pool__name="depth5").count() == 6


def test_build_pool_shows_nothing_at_verbosity_0(ranked, every_step):
    out, err = build_pool(verbosity=0)

    assert err == ""
    assert "pool depth5: 6 pairs over 3 turns" in out


def test_build_pool_writes_every_entry_when_it_writes_in_batches(ranked, monkeypatch):
    from annotation.relevance import pooling

    monkeypatch.setattr(pooling, "ENTRY_BATCH", 3)

    build_pool(verbosity=0)

    entries = PoolEntry.objects.filter(pool__name="depth5")
    assert sorted(entries.values_list("turn__turn_id", "passage_id")) == [
        (f"7_{t}", p) for t in (1, 2, 3) for p in ("p1", "p2")
    ]


# --- The display itself ----------------------------------------------------------------------------


def test_on_a_terminal_it_redraws_one_bar_and_ends_its_line():
    terminal = Terminal()
    progress = CommandProgress(OutputWrapper(terminal), verbosity=1, unit="turns")

    progress(1, 2)
    progress(2, 2, "calls 4")
    progress.close()

    assert terminal.getvalue() == (
        "\r[" + "#" * 15 + "." * 15 + "] 1/2 turns" + "\r[" + "#" * 30 + "] 2/2 turns calls 4" + "\n"
    )


def test_on_a_terminal_verbosity_0_shows_nothing():
    terminal = Terminal()
    progress = CommandProgress(OutputWrapper(terminal), verbosity=0, unit="turns")

    progress(1, 2)
    progress.close()

    assert terminal.getvalue() == ""


def test_between_lines_it_waits_but_always_shows_the_first_and_the_last_step():
    stream = StringIO()
    progress = CommandProgress(OutputWrapper(stream), verbosity=2, unit="units")

    for done in range(1, 101):
        progress(done, 100)

    assert stream.getvalue().splitlines() == ["1/100 units", "100/100 units"]
