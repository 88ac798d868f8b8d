"""iKAT topics (2023 and 2024 JSON, or TREC id<TAB>query) and passage files."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from annotation.formats.base import (
    MAX_PASSAGE_ID,
    MAX_STATEMENT_ID,
    MAX_TOPIC_NUMBER,
    MAX_TURN_ID,
    ImportFailed,
    Problems,
    as_text,
    json_line,
    load_json,
    read_jsonl,
    read_text,
)

# --- Topics ----------------------------------------------------------------------------------------


@dataclass
class TurnRecord:
    turn_id: str
    position: int
    utterance: str
    resolved_utterance: str = ""
    response: str = ""
    response_provenance: list[Any] = field(default_factory=list)
    ptkb_provenance: list[str] = field(default_factory=list)
    line: int = 0


@dataclass
class TopicRecord:
    number: str
    title: str
    ptkb: dict[str, str]
    turns: list[TurnRecord]


def parse_topics(path: str | Path, *, problems: Problems | None = None) -> list[TopicRecord]:
    """iKAT topics JSON (2023 `"9-1"` or 2024 integer numbers) or a TREC `id<TAB>query` file.

    Given `problems`, the file's problems are added there and the good topics returned, so that an
    import can check them against the database and report everything wrong in one pass; otherwise
    they are raised here.
    """
    name = str(path)
    text = read_text(path)
    own = problems is None
    problems = Problems(name) if problems is None else problems
    if text.lstrip()[:1] in ("[", "{"):
        topics = _parse_ikat_topics(load_json(text, name), name, problems)
    else:
        topics = _parse_tsv_topics(text, name, problems)
    if own:
        problems.raise_if_any()
    if not topics and not problems.items:
        raise ImportFailed([f"{name}: no topics in the file"])
    return topics


def _parse_ikat_topics(data: Any, path: str, problems: Problems) -> list[TopicRecord]:
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise ImportFailed([f"{path}:1: expected a list of topics"])
    topics: list[TopicRecord] = []
    seen_numbers: dict[str, int] = {}
    for topic in data:
        if not isinstance(topic, dict):
            problems.add(None, "every topic must be a JSON object")
            continue
        line = json_line(topic)
        if topic.get("number") in (None, ""):
            problems.add(line, "topic without 'number'")
            continue
        number = str(topic["number"]).strip()
        if problems.bad_id(line, number, "topic number", MAX_TOPIC_NUMBER):
            continue
        if number in seen_numbers:
            problems.add(line, f"topic {number} appears twice (first on line {seen_numbers[number]})")
            continue
        seen_numbers[number] = line
        ptkb_raw = topic.get("ptkb") or {}
        if isinstance(ptkb_raw, list):  # tolerate [{"id":..,"text":..}] or a plain list of strings
            ptkb_raw = {
                str(item.get("id", i + 1)) if isinstance(item, dict) else str(i + 1): (
                    item.get("text", "") if isinstance(item, dict) else str(item)
                )
                for i, item in enumerate(ptkb_raw)
            }
        if not isinstance(ptkb_raw, dict):
            problems.add(json_line(ptkb_raw, line), f"topic {number}: 'ptkb' must be an object of id: text")
            ptkb_raw = {}
        for statement_id in ptkb_raw:
            problems.bad_id(
                json_line(ptkb_raw, line), str(statement_id), "PTKB statement id", MAX_STATEMENT_ID
            )
        turns_raw = topic.get("turns")
        if not isinstance(turns_raw, list):
            problems.add(line, f"topic {number}: 'turns' must be a list")
            continue
        turns: list[TurnRecord] = []
        seen_turns: dict[str, int] = {}
        for position, turn in enumerate(turns_raw, start=1):
            tline = json_line(turn, line)
            if not isinstance(turn, dict):
                problems.add(tline, f"topic {number}: turn {position} is not an object")
                continue
            if turn.get("turn_id") in (None, ""):
                problems.add(tline, f"topic {number}: turn {position} has no 'turn_id'")
                continue
            turn_id = f"{number}_{str(turn['turn_id']).strip()}"
            if problems.bad_id(tline, turn_id, "turn id", MAX_TURN_ID):
                continue
            if turn_id in seen_turns:
                problems.add(tline, f"duplicate turn id {turn_id} (first on line {seen_turns[turn_id]})")
                continue
            seen_turns[turn_id] = tline
            if not as_text(turn.get("utterance")).strip():
                problems.add(tline, f"turn {turn_id} has no 'utterance'")
                continue
            turns.append(
                TurnRecord(
                    turn_id=turn_id,
                    position=position,
                    utterance=as_text(turn.get("utterance")),
                    resolved_utterance=as_text(turn.get("resolved_utterance")),
                    response=as_text(turn.get("response")),
                    response_provenance=list(turn.get("response_provenance") or []),
                    ptkb_provenance=[str(p) for p in turn.get("ptkb_provenance") or []],
                    line=tline,
                )
            )
        topics.append(
            TopicRecord(
                number=number,
                title=as_text(topic.get("title")),
                ptkb={str(k): as_text(v) for k, v in ptkb_raw.items()},
                turns=turns,
            )
        )
    return topics


def _parse_tsv_topics(text: str, path: str, problems: Problems) -> list[TopicRecord]:
    topics: list[TopicRecord] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split("\t", 1)
        if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
            problems.add(number, "expected 'id<TAB>query'")
            continue
        qid, query = parts[0].strip(), parts[1].strip()
        if problems.bad_id(number, qid, "topic id", min(MAX_TOPIC_NUMBER, MAX_TURN_ID)):
            continue
        if qid in seen:
            problems.add(number, f"duplicate topic id {qid} (first on line {seen[qid]})")
            continue
        seen[qid] = number
        topics.append(
            TopicRecord(number=qid, title=query, ptkb={}, turns=[TurnRecord(qid, 1, query, line=number)])
        )
    return topics


# --- Passages --------------------------------------------------------------------------------------


@dataclass(slots=True)
class PassageRecord:
    passage_id: str
    title: str
    text: str
    line: int


def passage_records(path: str | Path, *, problems: Problems) -> Iterator[PassageRecord]:
    """The well-formed passages of a passages JSONL file, read a line at a time; each bad line's problem
    goes to `problems`. A passage given twice is not looked for here: that needs the whole file, which
    an import checks where it holds it (annotation/collection/io.py stages it in the database)."""
    for line, obj in read_jsonl(path, problems):
        if "doc_id" in obj and "passage_id" in obj:
            pid = f"{as_text(obj['doc_id']).strip()}:{as_text(obj['passage_id']).strip()}"
            body = obj.get("passage_text", obj.get("text", obj.get("contents")))
        elif "id" in obj or "docid" in obj or "_id" in obj:
            pid = as_text(obj.get("id", obj.get("docid", obj.get("_id")))).strip()
            body = obj.get("text", obj.get("contents", obj.get("segment")))
        else:
            problems.add(line, "no passage id: expected 'doc_id' and 'passage_id', or 'id'")
            continue
        if not pid or pid == ":":
            problems.add(line, "empty passage id")
            continue
        if problems.bad_id(line, pid, "passage id", MAX_PASSAGE_ID):
            continue
        if not isinstance(body, str):
            problems.add(line, f"passage {pid} has no text ('passage_text', 'text' or 'contents')")
            continue
        yield PassageRecord(pid, as_text(obj.get("title")), body, line)
