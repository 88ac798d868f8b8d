"""A small TREC-RAG-shaped collection and nuggetizer's files for it, written as nuggetizer writes them
(`json.dumps(record) + "\\n"`, its key order), for the nugget format, score and agreement tests."""

from __future__ import annotations

import json
import random
from pathlib import Path

from annotation.collection.io import run_import
from annotation.models import Collection

QUESTIONS = {"2024-1": "what is a nugget", "2024-2": "who runs trec", "2024-10": "why é matters"}
RUNS = ("run-a", "run-b", "run-c")
IMPORTANCES = ("vital", "okay")
LABELS = ("support", "partial_support", "not_support")


def answer_sentences(run: str, qid: str) -> list[str]:
    # A sentence may end in a space: nuggetizer joins them as given, the stored answer text strips them.
    return [f"{run} says {qid} first. ", f"Then {run} adds more about {qid}."]


def reported_length(run: str, qid: str) -> int:
    """The answer's length as its run reports it; runs count differently (here: characters), so it is
    not the word count an export could make up."""
    return len(" ".join(answer_sentences(run, qid)))


def rag_collection(tmp_path: Path, collection: Collection, runs: tuple[str, ...] = RUNS) -> None:
    """Import TREC RAG answers of RUNS to QUESTIONS into the collection (creating its topics)."""
    lines = []
    for run in runs:
        for qid, question in QUESTIONS.items():
            sentences = answer_sentences(run, qid)
            lines.append(
                json.dumps(
                    {
                        "run_id": run,
                        "topic_id": qid,
                        "topic": question,
                        "references": ["d1", "d2"],
                        "response_length": reported_length(run, qid),
                        "answer": [{"text": s, "citations": [0]} for s in sentences],
                    }
                )
            )
    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join(lines) + "\n")
    run_import(path=path, collection=collection)


def nugget_lists(seed: int = 0, size: int = 4) -> dict[str, list[tuple[str, str]]]:
    rng = random.Random(seed)
    return {
        qid: [(f"nugget {i} of {qid} \u00e9", rng.choice(IMPORTANCES)) for i in range(size)]
        for qid in QUESTIONS
    }


def created_nuggets_file(path: Path, lists: dict[str, list[tuple[str, str]]]) -> Path:
    path.write_text(
        "".join(
            json.dumps(
                {
                    "query": QUESTIONS[qid],
                    "qid": qid,
                    "nuggets": [{"text": t, "importance": i} for t, i in nuggets],
                }
            )
            + "\n"
            for qid, nuggets in lists.items()
        )
    )
    return path


def assignment_records(
    lists: dict[str, list[tuple[str, str]]], seed: int = 1, runs: tuple[str, ...] = RUNS
) -> list[dict]:
    rng = random.Random(seed)
    records = []
    for run in runs:
        for qid, nuggets in lists.items():
            text = " ".join(answer_sentences(run, qid))  # as nuggetizer makes answer_text
            records.append(
                {
                    "query": QUESTIONS[qid],
                    "qid": qid,
                    "answer_text": text,
                    "response_length": reported_length(run, qid),
                    "run_id": run,
                    "nuggets": [
                        {"text": t, "importance": i, "assignment": rng.choice(LABELS)} for t, i in nuggets
                    ],
                }
            )
    return records


def assignments_file(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path
