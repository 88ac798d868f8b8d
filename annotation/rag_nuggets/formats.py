"""The nuggetizer JSONL files of TREC RAG nugget evaluation, both ways: created nuggets with their
importance, nugget assignments of answers, and per-answer scores.

nuggetizer (castorini's AutoNuggetizer scripts) writes every line with `json.dumps(record) + "\\n"`,
keys in the order below and non-ASCII escaped; the writers here do the same, so that a file read into
Assay and written back out is the same file byte for byte. Readers only read and validate (file:line on
every problem, all problems at once); neither touches the database.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from annotation.formats.base import MAX_TURN_ID, Problems, excerpt, read_jsonl
from annotation.models import MAX_NUGGET_TEXT, NUGGET_LABEL_FAILED, NuggetImportance, NuggetSupport

# nuggetizer writes "failed" where its LLM gave no readable label; the labels keep it (see the models).
IMPORTANCES = (*NuggetImportance.values, NUGGET_LABEL_FAILED)
ASSIGNMENTS = (*NuggetSupport.values, NUGGET_LABEL_FAILED)
# What nuggetizer's assignment step gives a created nugget without an importance.
IMPORTANCE_MISSING = NuggetImportance.VITAL.value
SCORE_NAMES = ("strict_vital_score", "strict_all_score", "vital_score", "all_score")
# nuggetizer ends its per-answer scores file with the mean over the file's answers under this qid.
OVERALL_QID = "all"


@dataclass(frozen=True, slots=True)
class FileNugget:
    """A nugget of a line: its text, its importance and (assignment files) the answer's label of it."""

    text: str
    importance: str
    assignment: str = ""


@dataclass
class CreatedNuggets:
    """One line of a created-nuggets file: a question's ordered nugget list."""

    qid: str
    query: str
    nuggets: list[FileNugget] = field(default_factory=list)
    line: int = 0


@dataclass
class AssignedAnswer:
    """One line of an assignments file: one run's answer to a question, labelled against every nugget."""

    qid: str
    query: str
    run_id: str
    answer_text: str
    nuggets: list[FileNugget] = field(default_factory=list)
    response_length: int | None = None
    line: int = 0


@dataclass(frozen=True)
class AnswerScores:
    """The four scores of one answer (or, under qid "all", their mean over a file's answers)."""

    qid: str
    strict_vital_score: float
    strict_all_score: float
    vital_score: float
    all_score: float


def _string(obj: dict[str, Any], key: str, line: int, problems: Problems) -> str | None:
    value = obj.get(key)
    if not isinstance(value, str):
        problems.add(line, f"no '{key}' (a string)")
        return None
    return value


def _nuggets(
    obj: dict[str, Any], line: int, problems: Problems, *, assigned: bool
) -> list[FileNugget] | None:
    items = obj.get("nuggets")
    if not isinstance(items, list):
        problems.add(
            line, "'nuggets' must be a list of {text, importance" + (", assignment}" if assigned else "}")
        )
        return None
    nuggets: list[FileNugget] = []
    ok = True
    for index, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("text"), str) or not item["text"].strip():
            problems.add(line, f"nugget {index + 1} has no 'text'")
            ok = False
            continue
        if len(item["text"]) > MAX_NUGGET_TEXT:
            problems.add(
                line,
                f"nugget {index + 1} has {len(item['text']):,} characters; a nugget has at most {MAX_NUGGET_TEXT:,}",
            )
            ok = False
            continue
        # A created nugget without importance takes the one nuggetizer's next step gives it; an assignment
        # line always carries one (nuggetizer's scores read it).
        importance = item.get("importance", None if assigned else IMPORTANCE_MISSING)
        if importance not in IMPORTANCES:
            problems.add(
                line,
                f"nugget {index + 1}: importance must be {', '.join(IMPORTANCES[:-1])} or {IMPORTANCES[-1]}, "
                f"not {excerpt(importance, 20)}",
            )
            ok = False
            continue
        assignment = item.get("assignment", "")
        if assigned and assignment not in ASSIGNMENTS:
            problems.add(
                line,
                f"nugget {index + 1}: assignment must be one of {', '.join(ASSIGNMENTS)}, "
                f"not {excerpt(assignment, 20)}",
            )
            ok = False
            continue
        nuggets.append(
            # A nugget's text comes back on every answer to its question (90 runs): held once (sys.intern).
            FileNugget(
                text=sys.intern(item["text"]),
                importance=sys.intern(importance),
                assignment=sys.intern(assignment) if assigned else "",
            )
        )
    return nuggets if ok else None


def _qid(obj: dict[str, Any], line: int, problems: Problems) -> str | None:
    qid = obj.get("qid")
    if isinstance(qid, int) and not isinstance(qid, bool):
        problems.add(line, "'qid' must be a string, as nuggetizer writes it")
        return None
    qid = _string(obj, "qid", line, problems)
    if qid is None or problems.bad_id(line, qid, "qid", MAX_TURN_ID):
        return None
    return qid


def parse_created_nuggets(path: str | Path, *, problems: Problems) -> list[CreatedNuggets]:
    """`{query, qid, nuggets: [{text, importance}]}` a line, one line per question."""
    records: list[CreatedNuggets] = []
    seen: dict[str, int] = {}
    for line, obj in read_jsonl(path, problems):
        qid = _qid(obj, line, problems)
        query = _string(obj, "query", line, problems)
        nuggets = _nuggets(obj, line, problems, assigned=False)
        if qid is None or query is None or nuggets is None:
            continue
        if qid in seen:
            problems.add(line, f"qid {qid} appears twice (first on line {seen[qid]})")
            continue
        seen[qid] = line
        records.append(CreatedNuggets(qid=qid, query=query, nuggets=nuggets, line=line))
    return records


def parse_assignments(path: str | Path, *, problems: Problems) -> list[AssignedAnswer]:
    """`{query, qid, answer_text, response_length, run_id, nuggets: [{text, importance, assignment}]}` a
    line, one line per (run, question); `response_length` may be absent."""
    records: list[AssignedAnswer] = []
    seen: dict[tuple[str, str], int] = {}
    for line, obj in read_jsonl(path, problems):
        qid = _qid(obj, line, problems)
        query = _string(obj, "query", line, problems)
        run_id = _string(obj, "run_id", line, problems)
        answer_text = _string(obj, "answer_text", line, problems)
        nuggets = _nuggets(obj, line, problems, assigned=True)
        length = obj.get("response_length")
        if length is not None and (isinstance(length, bool) or not isinstance(length, int)):
            problems.add(line, f"'response_length' must be an integer, not {excerpt(length, 20)}")
            continue
        if qid is None or query is None or run_id is None or answer_text is None or nuggets is None:
            continue
        if (run_id, qid) in seen:
            problems.add(line, f"run {run_id} answers qid {qid} twice (first on line {seen[run_id, qid]})")
            continue
        seen[run_id, qid] = line
        records.append(
            AssignedAnswer(
                qid=qid,
                query=query,
                run_id=run_id,
                answer_text=answer_text,
                nuggets=nuggets,
                response_length=length,
                line=line,
            )
        )
    return records


def _line_of(record: dict[str, Any]) -> str:
    # nuggetizer's own writing: default separators, ASCII escapes.
    return json.dumps(record) + "\n"


def created_nuggets_text(records: list[CreatedNuggets]) -> str:
    return "".join(
        _line_of(
            {
                "query": r.query,
                "qid": r.qid,
                "nuggets": [{"text": n.text, "importance": n.importance} for n in r.nuggets],
            }
        )
        for r in records
    )


def assignment_line(r: AssignedAnswer) -> str:
    """One line of an assignments file."""
    record: dict[str, Any] = {"query": r.query, "qid": r.qid, "answer_text": r.answer_text}
    if r.response_length is not None:
        record["response_length"] = r.response_length
    record["run_id"] = r.run_id
    record["nuggets"] = [
        {"text": n.text, "importance": n.importance, "assignment": n.assignment} for n in r.nuggets
    ]
    return _line_of(record)


def scores_text(records: list[AnswerScores]) -> str:
    return "".join(
        _line_of({"qid": r.qid, **{name: getattr(r, name) for name in SCORE_NAMES}}) for r in records
    )
