"""Runs: TREC run files, iKAT JSON runs, TREC RAG 2024 answers."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from annotation.formats.base import (
    MAX_INT,
    MAX_PASSAGE_ID,
    MAX_RUN_NAME,
    MAX_TURN_ID,
    ImportFailed,
    Problems,
    as_text,
    check_name,
    excerpt,
    first_line,
    iter_jsonl,
    json_line,
    load_json,
    plain_line,
    read_lines,
    read_text,
)
from core.wording import plural

# --- Runs ------------------------------------------------------------------------------------------


@dataclass
class SentenceRecord:
    text: str
    citations: list[str]


@dataclass
class ResponseRecord:
    turn_id: str
    rank: int
    text: str
    references: list[str] = field(default_factory=list)
    sentences: list[SentenceRecord] = field(default_factory=list)
    line: int = 0
    topic_title: str = ""
    # TREC RAG answers carry the answer's length as the run reported it; nuggetizer's assignment files
    # repeat it, so it is kept to give those files back unchanged.
    response_length: int | None = None


@dataclass
class RunRecord:
    name: str
    kind: str
    source_format: str
    # turn id -> (passage ids in rank order, scores)
    rankings: dict[str, tuple[list[str], list[float]]] = field(default_factory=dict)
    responses: list[ResponseRecord] = field(default_factory=list)
    # turn id -> first line that names it, for errors about turns the collection lacks
    turn_lines: dict[str, int] = field(default_factory=dict)
    # turn id -> passages a response of the turn gave twice (iKAT JSON runs; the first is kept), for the
    # run's validation report
    duplicates: dict[str, int] = field(default_factory=dict)


def run_format(path: str | Path) -> str:
    """ "trec", "ikat-json" or "rag-jsonl": what kind of run file `path` is, from its first line alone."""
    head = first_line(path)
    if head[:1] not in ("{", "["):
        return "trec"
    try:
        first = json.loads(head)
    except (ValueError, RecursionError):
        first = None
    return "rag-jsonl" if isinstance(first, dict) and "answer" in first else "ikat-json"


def parse_run(
    path: str | Path, name: str | None = None, *, problems: Problems | None = None
) -> list[RunRecord]:
    """A TREC run, an iKAT JSON run, or TREC RAG 2024 answers JSONL (one or more runs).

    Given `problems`, the file's problems are added there and the good records returned, so that an
    import can check their turns against the database and report everything wrong in one pass;
    otherwise they are raised here. (An import streams a TREC run through `TrecRunLines` instead.)
    """
    pathname = str(path)
    if name is not None:
        check_name(name, "run name", MAX_RUN_NAME)
    kind = run_format(path)
    own = problems is None
    problems = Problems(pathname) if problems is None else problems
    if kind == "trec":
        records = _parse_trec_run(TrecRunLines(path, name, problems))
    elif kind == "rag-jsonl":
        records = _parse_rag_answers(read_text(path), pathname, name, problems)
    else:
        records = [_parse_ikat_json_run(read_text(path), pathname, name, problems)]
    if own:
        problems.raise_if_any()
    return records


_DOTS = frozenset({".", ".."})
# Distinct run tags remembered while a TREC run streams: one is the rule, several a problem (with --name
# they are not looked at), so past this many a file's further tags are no longer listed.
_TAGS = 1000


# A well-formed TREC run line: (line number, turn id, passage id, rank, score); a tuple, made millions of times.
TrecLine = tuple[int, str, str, int, float]


class TrecRunLines:
    """The well-formed lines of a TREC run `qid Q0 docid rank score tag`, read one at a time; each bad
    line's problem goes to `problems`. A document ranked twice for a turn is looked for by the caller
    (it needs the whole file). Once read, `name` is the run's name: `name` if given, else its one tag
    (several tags are a problem, added at the end of the reading, as is a file without run lines)."""

    def __init__(self, path: str | Path, name: str | None, problems: Problems) -> None:
        self.path, self.given, self.problems = str(path), name, problems
        self.name = name or ""
        self.tags: set[str] = set()

    def __iter__(self) -> Iterator[TrecLine]:
        problems, name, tags = self.problems, self.given, self.tags
        count = 0
        for number, line in read_lines(self.path):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 6:
                problems.add(number, f"expected 6 columns 'qid Q0 docid rank score tag', found {len(parts)}")
                continue
            qid, _q0, docid, rank_s, score_s, tag = parts
            # Only a line that might break a rule is checked id by id (most run files hold no '/' or
            # control character).
            plain = (
                plain_line(line)
                and len(qid) <= MAX_TURN_ID
                and len(docid) <= MAX_PASSAGE_ID
                and len(tag) <= MAX_RUN_NAME
                and qid not in _DOTS
                and docid not in _DOTS
                and tag not in _DOTS
            )
            if not plain and (
                problems.bad_id(number, qid, "turn id", MAX_TURN_ID)
                or problems.bad_id(number, docid, "passage id", MAX_PASSAGE_ID)
                or (
                    name is None
                    and tag not in tags
                    and problems.bad_id(number, tag, "run name", MAX_RUN_NAME)
                )
            ):
                continue
            try:
                rank = int(rank_s) if len(rank_s) <= 12 else None
            except ValueError:
                rank = None
            if rank is None:
                problems.add(number, f"rank {excerpt(rank_s, 20)} is not an integer")
                continue
            try:
                score = float(score_s)
            except ValueError:
                problems.add(number, f"score {excerpt(score_s, 20)} is not a number")
                continue
            if not math.isfinite(score):
                problems.add(number, f"score {excerpt(score_s, 20)} is not a finite number")
                continue
            if name is None and len(tags) < _TAGS:
                tags.add(tag)
            count += 1
            yield number, qid, docid, rank, score
        if not count:
            if not problems.items:
                raise ImportFailed([f"{self.path}: no run lines"])
        elif name is None and len(tags) > 1:
            # Named with the file's other problems; its turns are still checked (nothing is stored).
            problems.add(None, f"the file holds several run tags ({', '.join(sorted(tags))}); pass --name")
        self.name = name or next(iter(tags), "")


def _parse_trec_run(lines: TrecRunLines) -> list[RunRecord]:
    rankings_of: dict[str, list[tuple[int, float, str]]] = {}
    turn_lines: dict[str, int] = {}
    seen: set[tuple[str, str]] = set()
    for number, qid, docid, rank, score in lines:
        if (qid, docid) in seen:
            lines.problems.add(number, f"document {docid} ranked twice for {qid}")
            continue
        seen.add((qid, docid))
        if qid not in rankings_of:
            rankings_of[qid] = []
            turn_lines[qid] = number
        rankings_of[qid].append((rank, -score, docid))
    if not rankings_of:
        return []
    rankings = {turn_id: ranked(rows) for turn_id, rows in rankings_of.items()}
    return [
        RunRecord(
            name=lines.name, kind="automatic", source_format="trec", rankings=rankings, turn_lines=turn_lines
        )
    ]


def ranked(rows: list[tuple[int, float, str]]) -> tuple[list[str], list[float]]:
    """A turn's (rank, -score, passage id) rows as its passage ids and scores in rank order: by rank, ties
    by higher score, then by passage id."""
    rows.sort()
    return [r[2] for r in rows], [-r[1] for r in rows]


def _parse_ikat_json_run(text: str, path: str, name: str | None, problems: Problems) -> RunRecord:
    data = load_json(text, path)
    if not isinstance(data, dict) or not isinstance(data.get("turns"), list):
        raise ImportFailed([f"{path}:1: expected an iKAT run object with 'run_name' and 'turns'"])
    run_name = name or as_text(data.get("run_name")).strip()
    # A bad name is one problem among the others: the turns are still read, and nothing is stored.
    if not run_name:
        problems.add(json_line(data, 1), "the run has no 'run_name'; pass --name")
    else:
        problems.bad_id(json_line(data, 1), run_name, "run name", MAX_RUN_NAME)
    run_type = as_text(data.get("run_type") or "automatic").strip().lower().replace("_", "-")
    if run_type not in {"automatic", "manual", "generation-only"}:
        problems.add(
            json_line(data, 1), f"run_type {excerpt(run_type)} is not automatic, manual or generation-only"
        )
    record = RunRecord(name=run_name, kind=run_type, source_format="ikat-json")
    for turn in data["turns"]:
        line = json_line(turn, 1)
        if not isinstance(turn, dict) or turn.get("turn_id") in (None, ""):
            problems.add(line, "turn without 'turn_id'")
            continue
        turn_id = as_text(turn["turn_id"]).strip()
        if problems.bad_id(line, turn_id, "turn id", MAX_TURN_ID):
            continue
        if turn_id in record.turn_lines:
            problems.add(line, f"turn {turn_id} appears twice (first on line {record.turn_lines[turn_id]})")
            continue
        record.turn_lines[turn_id] = line
        best: list[tuple[float, str]] = []
        seen: set[str] = set()
        for response in turn.get("responses") or []:
            rline = json_line(response, line)
            if not isinstance(response, dict):
                problems.add(rline, f"turn {turn_id}: every response must be an object")
                continue
            rank_value = response.get("rank", 1)
            if not isinstance(rank_value, int | str) or isinstance(rank_value, bool):
                rank_value = None
            try:
                rank = int(rank_value) if rank_value is not None and len(str(rank_value)) <= 12 else None
            except ValueError:
                rank = None
            if rank is None or not 0 <= rank <= MAX_INT:
                problems.add(rline, f"response rank {excerpt(response.get('rank'), 20)} is not an integer")
                continue
            used: list[str] = []
            own: set[str] = set()
            for prov in response.get("passage_provenance") or []:
                if not isinstance(prov, dict):
                    problems.add(
                        rline, f"turn {turn_id}: passage_provenance entries must be objects with 'id'"
                    )
                    continue
                pid = as_text(prov.get("id")).strip()
                if not pid:
                    problems.add(json_line(prov, rline), "passage_provenance entry without 'id'")
                    continue
                if problems.bad_id(json_line(prov, rline), pid, "passage id", MAX_PASSAGE_ID):
                    continue
                raw_score = prov.get("score", 0.0)
                score, why = _score(raw_score)
                if score is None:
                    problems.add(json_line(prov, rline), f"score {excerpt(raw_score, 20)} {why}")
                    continue
                if pid in own:
                    record.duplicates[turn_id] = record.duplicates.get(turn_id, 0) + 1
                own.add(pid)
                if prov.get("used"):
                    used.append(pid)
                if pid not in seen:
                    seen.add(pid)
                    best.append((score, pid))
            text_value = as_text(response.get("text"))
            if text_value.strip():
                record.responses.append(
                    ResponseRecord(
                        turn_id=turn_id,
                        rank=rank,
                        text=text_value,
                        references=used,
                        sentences=[SentenceRecord(text_value, used)],
                        line=rline,
                    )
                )
        if best:
            # provenance lists are in rank order already; keep it, as ir_measures breaks ties by score
            record.rankings[turn_id] = ([pid for _s, pid in best], [s for s, _pid in best])
    return record


def _parse_rag_answers(text: str, path: str, name: str | None, problems: Problems) -> list[RunRecord]:
    runs: dict[str, RunRecord] = {}
    seen: dict[tuple[str, str], int] = {}
    for line, obj in iter_jsonl(text, path, problems):
        run_id = name or as_text(obj.get("run_id")).strip()
        topic_id = as_text(obj.get("topic_id")).strip()
        if not run_id:
            problems.add(line, "answer without 'run_id'; pass --name")
            continue
        if not topic_id:
            problems.add(line, "answer without 'topic_id'")
            continue
        if problems.bad_id(line, run_id, "run name", MAX_RUN_NAME) or problems.bad_id(
            line, topic_id, "topic id", MAX_TURN_ID
        ):
            continue
        if (run_id, topic_id) in seen:
            problems.add(
                line, f"run {run_id} answers topic {topic_id} twice (first on line {seen[run_id, topic_id]})"
            )
            continue
        seen[run_id, topic_id] = line
        raw_references = obj.get("references") or []
        if not isinstance(raw_references, list):
            problems.add(line, "'references' must be a list of passage ids")
            continue
        references = [as_text(r).strip() for r in raw_references]
        if any(problems.bad_id(line, r, "passage id", MAX_PASSAGE_ID) for r in references):
            continue
        length = obj.get("response_length")
        if length is not None and (not isinstance(length, int) or isinstance(length, bool) or length < 0):
            problems.add(line, f"'response_length' must be a count of words, not {excerpt(length, 20)}")
            continue
        answer = obj.get("answer")
        if not isinstance(answer, list):
            problems.add(line, "'answer' must be a list of {text, citations}")
            continue
        sentences: list[SentenceRecord] = []
        for index, sentence in enumerate(answer):
            if not isinstance(sentence, dict) or not isinstance(sentence.get("text"), str):
                problems.add(line, f"sentence {index} has no 'text'")
                continue
            cited: list[str] = []
            for citation in sentence.get("citations") or []:
                if not isinstance(citation, int) or isinstance(citation, bool):
                    problems.add(line, f"sentence {index}: citation {excerpt(citation, 20)} is not an index")
                elif not 0 <= citation < len(references):
                    problems.add(
                        line,
                        f"sentence {index}: citation {citation} is outside 'references' "
                        f"({plural(len(references), 'entry')})",
                    )
                else:
                    cited.append(references[citation])
            sentences.append(SentenceRecord(sentence["text"], cited))
        run = runs.setdefault(run_id, RunRecord(name=run_id, kind="automatic", source_format="rag-jsonl"))
        run.turn_lines.setdefault(topic_id, line)
        run.responses.append(
            ResponseRecord(
                turn_id=topic_id,
                rank=1,
                text=" ".join(s.text.strip() for s in sentences),
                references=references,
                sentences=sentences,
                line=line,
                topic_title=as_text(obj.get("topic")),
                response_length=length,
            )
        )
    if not runs and not problems.items:
        raise ImportFailed([f"{path}: no answers in the file"])
    return list(runs.values())


def _score(value: object) -> tuple[float | None, str]:
    """(score, "") or (None, why not): NaN and infinities cannot be ranked, nor stored in PostgreSQL's JSON."""
    if isinstance(value, bool) or not isinstance(value, int | float | str) or len(str(value)) > 40:
        return None, "is not a number"
    try:
        score = float(value)
    except ValueError:
        return None, "is not a number"
    return (score, "") if math.isfinite(score) else (None, "is not a finite number")
