"""Support assessment at TREC RAG 2024 scale, each figure beside a baseline run in the same invocation.

Generates 30 runs x 100 topics of RAG answers (6-10 sentences, 0-3 citations each, about 10% uncited)
and one LLM label per (sentence, first cited passage), then times:
1. import_support_labels of every label (JSONL), beside a raw psycopg COPY of the same lines (JSON
   parsing included) into a plain table of the same PostgreSQL database;
2. support_scores (weighted precision and recall per run and topic), beside a straightforward per-answer
   ORM loop (one query for the sentences and one for the labels of each answer) computing the same numbers.

Usage: python bench/bench_support.py [--runs 30] [--topics 100]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import django_with_temp_database, raw_copy  # noqa: E402


def generate(scratch: Path, runs: int, topics: int) -> tuple[Path, Path, int]:
    rng = random.Random(0)
    answers, labels = scratch / "answers.jsonl", scratch / "labels.jsonl"
    n_labels = 0
    with open(answers, "w") as a_out, open(labels, "w") as l_out:
        for r in range(runs):
            for t in range(topics):
                references = [f"msmarco_v2.1_doc_{t:03d}_{k:02d}#{k}" for k in range(rng.randint(3, 12))]
                answer = []
                for i in range(rng.randint(6, 10)):
                    cites = (
                        [] if rng.random() < 0.1 else rng.sample(range(len(references)), rng.randint(1, 3))
                    )
                    answer.append({"text": f"Sentence {i} of run {r} on topic {t}.", "citations": cites})
                    if cites:
                        label = rng.choice(["FS", "PS", "NS"])
                        row = {"run_id": f"run{r}", "topic_id": f"t{t}", "sentence_index": i}
                        l_out.write(
                            json.dumps(row | {"passage_id": references[cites[0]], "label": label}) + "\n"
                        )
                        n_labels += 1
                a_out.write(
                    json.dumps(
                        {
                            "run_id": f"run{r}",
                            "topic_id": f"t{t}",
                            "topic": f"topic {t}",
                            "references": references,
                            "response_length": 100,
                            "answer": answer,
                        }
                    )
                    + "\n"
                )
    return answers, labels, n_labels


def raw_baseline(labels: Path) -> float:
    with open(labels) as handle:
        return raw_copy(
            5,
            (
                (o["run_id"], o["topic_id"], o["sentence_index"], o["passage_id"], o["label"])
                for o in map(json.loads, handle)
            ),
        )


def naive_scores(collection, judge) -> dict:
    from annotation.models import SUPPORT_WEIGHTS, Response, SupportJudgment
    from judging.measures.support import answer_support

    per: dict[str, list[tuple[float, float]]] = {}
    for response in Response.objects.filter(run__collection=collection).select_related("run"):
        sentences = list(response.sentences.all())
        labels = {
            j.sentence_id: j.label
            for j in SupportJudgment.objects.filter(
                judge=judge, sentence__response=response, citation_index=0
            )
        }
        if not labels:
            continue
        per.setdefault(response.run.name, []).append(
            answer_support(
                [[labels[s.id]] if s.id in labels else [] for s in sentences], weights=SUPPORT_WEIGHTS
            )
        )
    return {run: sum(p for p, _ in v) / len(v) for run, v in per.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--topics", type=int, default=100)
    args = parser.parse_args()
    scratch = django_with_temp_database()

    from annotation.collection.io import run_import
    from annotation.models import Collection, Judge
    from annotation.services import judge_get_or_create
    from annotation.support.io import support_labels_import
    from judging.scores.support import support_scores

    answers, labels, n_labels = generate(scratch, args.runs, args.topics)
    collection = Collection.objects.create(name="rag24-bench")
    start = time.perf_counter()
    run_import(path=answers, collection=collection)
    print(f"setup: {args.runs} runs x {args.topics} topics imported in {time.perf_counter() - start:.1f} s")

    judge = judge_get_or_create(name="gpt-4o", kind=Judge.Kind.LLM)
    start = time.perf_counter()
    result = support_labels_import(path=labels, collection=collection, judge=judge)
    ours = time.perf_counter() - start
    assert result.created == n_labels, result
    baseline = raw_baseline(labels)
    print(
        f"import_support_labels, {n_labels:,} labels: {ours:.2f} s; raw COPY {baseline:.2f} s; "
        f"ratio {ours / baseline:.1f}x"
    )

    start = time.perf_counter()
    scores = support_scores(collection=collection, judge=judge)
    ours = time.perf_counter() - start
    start = time.perf_counter()
    naive = naive_scores(collection, judge)
    baseline = time.perf_counter() - start
    for run, value in naive.items():
        assert abs(scores["runs"][run]["weighted_precision"] - value) < 1e-9, run
    print(
        f"support_scores, {args.runs * args.topics:,} answers: {ours:.2f} s; per-answer ORM loop {baseline:.2f} s; "
        f"ratio {ours / baseline:.2f}x (speed-up {baseline / ours:.0f}x)"
    )


if __name__ == "__main__":
    main()
