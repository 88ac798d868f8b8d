"""runs_evaluate equals ir_measures run directly on the exported qrels file and the TREC run files.

Uses the real iKAT 2024 NIST qrels (116 judged turns) with seeded generated runs; skips without the data.
"""

import random
from pathlib import Path

import ir_measures
import pytest
from django.core.management import call_command

from annotation.collection.io import topics_import
from annotation.models import Collection, Judge
from annotation.relevance.io import qrels_import, qrels_lines
from annotation.services import judge_get_or_create
from judging.scores.relevance import evaluation_measures, runs_evaluate

pytestmark = pytest.mark.django_db


def write_run(path: Path, tag: str, rankings: dict[str, list[tuple[str, float]]]) -> None:
    with path.open("w") as handle:
        for turn_id, ranked in rankings.items():
            for rank, (passage_id, score) in enumerate(ranked, start=1):
                handle.write(f"{turn_id} Q0 {passage_id} {rank} {score!r} {tag}\n")


def generate_run(rng: random.Random, qrels: dict[str, dict[str, int]], turns: list[str], *, deep: set[str]):
    """A noisy ranking per turn: judged passages (relevant ones drawn a little higher) among unjudged ones,
    scores rounded so that ties occur; a few turns run past rank 1000 with relevant passages around it."""
    rankings: dict[str, list[tuple[str, float]]] = {}
    for turn_id in turns:
        judged = list(qrels.get(turn_id, {}).items())
        picked = [pid for pid, grade in judged if rng.random() < 0.3 + 0.15 * grade]
        noise = [f"clueweb22-en9999-{turn_id}-{i}:0" for i in range(rng.randint(5, 80))]
        docs = picked + noise
        rng.shuffle(docs)
        if turn_id in deep:
            filler = [f"clueweb22-en8888-{turn_id}-{i}:0" for i in range(1100)]
            docs = filler[:990] + docs[:30] + filler[990:]
        count = len(docs)
        rankings[turn_id] = [(pid, round((count - i) / 7.0 + rng.random(), 1)) for i, pid in enumerate(docs)]
    return rankings


def test_it_equals_ir_measures_on_the_exported_qrels_and_run_files(shared_data, tmp_path):
    data = shared_data / "ikat2024"
    collection = Collection.objects.create(name="ikat-2024")
    topics_import(path=data / "2024_test_topics.json", collection=collection)
    judge = judge_get_or_create(name="nist", kind=Judge.Kind.IMPORTED)
    qrels_import(path=data / "2024_test_qrels.trec", collection=collection, judge=judge)
    qrels_file = tmp_path / "exported.qrels"
    call_command("export_qrels", collection=collection.name, judge=judge.name, output=str(qrels_file))
    file_qrels: dict[str, dict[str, int]] = {}
    for qrel in ir_measures.read_trec_qrels(str(qrels_file)):
        file_qrels.setdefault(qrel.query_id, {})[qrel.doc_id] = qrel.relevance
    assert len(file_qrels) == 116
    assert "".join(qrels_lines(collection=collection, judge=judge)) == qrels_file.read_text()

    rng = random.Random(20240917)
    judged = sorted(file_qrels)
    unjudged = sorted(set(collection.turns.values_list("turn_id", flat=True)) - set(judged))[:12]
    skipped = set(rng.sample(judged, 9))
    plans = {
        "full": (judged + unjudged, set(rng.sample(judged, 3))),
        "shallow": (judged, set()),
        "gappy": ([t for t in judged if t not in skipped] + unjudged, set()),
    }
    run_files = {}
    for tag, (turns, deep) in plans.items():
        run_files[tag] = tmp_path / f"{tag}.run"
        write_run(run_files[tag], tag, generate_run(rng, file_qrels, turns, deep=deep))
        call_command("import_run", str(run_files[tag]), collection=collection.name)

    for threshold in (2, 3):
        ours = runs_evaluate(collection=collection, judge=judge, rel_threshold=threshold)
        measures = evaluation_measures(rel_threshold=threshold)
        names = [str(m) for m in measures]
        assert ours.turns == sorted(judged, key=lambda t: [int(x) for x in t.split("_")])
        for tag, path in run_files.items():
            direct = {
                (m.query_id, str(m.measure)): m.value
                for m in ir_measures.iter_calc(measures, file_qrels, ir_measures.read_trec_run(str(path)))
            }
            for turn in judged:
                for name in names:
                    expected = 0.0 if tag == "gappy" and turn in skipped else direct[turn, name]
                    assert ours.per_turn[tag][turn][name] == pytest.approx(expected, abs=1e-12), (
                        tag,
                        turn,
                        name,
                    )
            if tag == "gappy":
                # ir_measures averages over the turns the run holds; we score its 9 missing turns 0.
                assert sorted(ours.missing[tag]) == sorted(skipped)
                for name in names:
                    mean = sum(direct.get((turn, name), 0.0) for turn in judged) / len(judged)
                    assert ours.runs[tag][name] == pytest.approx(mean, abs=1e-12)
            else:
                aggregate = ir_measures.calc_aggregate(
                    measures, file_qrels, ir_measures.read_trec_run(str(path))
                )
                assert ours.missing[tag] == []
                assert ours.runs[tag] == pytest.approx({str(m): v for m, v in aggregate.items()}, abs=1e-12)
    # the deep turns hold relevant passages past rank 1000, so the R@1000 cut is exercised
    uncut = {
        m.query_id: m.value
        for m in ir_measures.iter_calc(
            [ir_measures.R(rel=3) @ 5000], file_qrels, ir_measures.read_trec_run(str(run_files["full"]))
        )
    }
    assert any(ours.per_turn["full"][t]["R(rel=3)@1000"] < uncut[t] for t in plans["full"][1])
