"""Gold nugget and gold response files: our JSONL and the CONE-RAG JSON shapes, both ways.

Readers only read and validate (file:line on every problem, all problems at once through `Problems`);
writers turn plain records into text. Neither touches the database. Texts are kept exactly as given:
CONE-RAG nuggets are spans copied from passages and often start or end with a space, which a round
trip must give back byte for byte.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from annotation.formats.base import (
    MAX_INT,
    MAX_NUGGET_KEY,
    MAX_NUGGET_RELEVANCE,
    MAX_PASSAGE_ID,
    MAX_TURN_ID,
    ImportFailed,
    Problems,
    excerpt,
    iter_jsonl,
    json_line,
    load_json,
    read_text,
)

FORMATS = ("jsonl", "cone-rag")


@dataclass
class NuggetRecord:
    turn_id: str
    key: str
    text: str
    passage_id: str = ""
    start: int | None = None
    end: int | None = None
    relevance: str = ""
    duplicate_of: str | None = None
    judge: str = ""
    line: int = 0


@dataclass
class NuggetFile:
    """The nuggets of a file and the turns it covers, in file order (a turn may have no nugget)."""

    turns: list[str] = field(default_factory=list)
    nuggets: list[NuggetRecord] = field(default_factory=list)
    turn_lines: dict[str, int] = field(default_factory=dict)


@dataclass
class GoldResponseRecord:
    turn_id: str
    text: str
    # JSONL names the nuggets a response uses by key, CONE-RAG by text (and lists the unused ones too)
    nugget_keys: list[str] = field(default_factory=list)
    matched: list[str] = field(default_factory=list)
    not_matched: list[str] = field(default_factory=list)
    by_key: bool = False
    is_draft: bool = False
    line: int = 0


def _optional_int(value: Any) -> tuple[int | None, bool]:
    if value is None:
        return None, True
    if isinstance(value, bool) or not isinstance(value, int):
        return None, False
    return value, True


# --- Nuggets: our JSONL ----------------------------------------------------------------------------


def parse_nuggets_jsonl(path: str | Path, *, problems: Problems | None = None) -> NuggetFile:
    """One nugget a line: {turn_id, nugget_id, text, passage_id, start, end, relevance, judge, duplicate_of}.

    Given `problems`, the file's problems are added there and the good nuggets returned (see
    `parse_nuggets`); otherwise they are raised here.
    """
    name = str(path)
    own = problems is None
    problems = Problems(name) if problems is None else problems
    result = NuggetFile()
    seen: dict[tuple[str, str], int] = {}
    # Every nugget the file names, also those refused for another fault: a duplicate_of naming one of
    # them is not a second problem.
    named: set[tuple[str, str]] = set()
    for line, obj in iter_jsonl(read_text(path), name, problems):
        turn_id = obj.get("turn_id")
        key = obj.get("nugget_id")
        text = obj.get("text")
        if not isinstance(turn_id, str) or not turn_id.strip():
            problems.add(line, "no 'turn_id'")
            continue
        if not isinstance(key, str) or not key:
            problems.add(line, "no 'nugget_id' (a string such as \"[1]\")")
            continue
        if problems.bad_id(line, turn_id, "turn id", MAX_TURN_ID) or problems.bad_id(
            line, key, "nugget id", MAX_NUGGET_KEY
        ):
            continue
        named.add((turn_id, key))
        if not isinstance(text, str):
            problems.add(line, f"nugget {key} has no 'text'")
            continue
        if (turn_id, key) in seen:
            problems.add(
                line, f"nugget {key} of turn {turn_id} appears twice (first on line {seen[turn_id, key]})"
            )
            continue
        start, ok_start = _optional_int(obj.get("start"))
        end, ok_end = _optional_int(obj.get("end"))
        if not (ok_start and ok_end):
            problems.add(line, "'start' and 'end' must be integers or null")
            continue
        if (start is None) != (end is None):
            problems.add(line, "give both 'start' and 'end', or neither")
            continue
        if start is not None and end is not None and not 0 <= start <= end <= MAX_INT:
            problems.add(line, f"span {start}-{end} is not 0 <= start <= end")
            continue
        passage_id = obj.get("passage_id") or ""
        if start is not None and not passage_id:
            problems.add(line, "a span needs its 'passage_id'")
            continue
        if passage_id and problems.bad_id(line, str(passage_id), "passage id", MAX_PASSAGE_ID):
            continue
        duplicate_of = obj.get("duplicate_of")
        if duplicate_of is not None and (
            not isinstance(duplicate_of, str) or len(duplicate_of) > MAX_NUGGET_KEY
        ):
            problems.add(line, "'duplicate_of' must be a nugget id or null")
            continue
        if duplicate_of == key:
            problems.add(line, f"nugget {key} cannot duplicate itself")
            continue
        relevance = obj.get("relevance")
        if relevance is not None and len(str(relevance)) > MAX_NUGGET_RELEVANCE:
            problems.add(line, f"relevance {excerpt(relevance, 20)} is not a grade")
            continue
        seen[turn_id, key] = line
        if turn_id not in result.turn_lines:
            result.turn_lines[turn_id] = line
            result.turns.append(turn_id)
        result.nuggets.append(
            NuggetRecord(
                turn_id=turn_id,
                key=key,
                text=text,
                passage_id=str(passage_id),
                start=start,
                end=end,
                relevance="" if relevance is None else str(relevance),
                duplicate_of=duplicate_of,
                judge=str(obj.get("judge") or ""),
                line=line,
            )
        )
    for record in result.nuggets:
        if record.duplicate_of is not None and (record.turn_id, record.duplicate_of) not in named:
            problems.add(
                record.line,
                f"duplicate_of {record.duplicate_of} is not a nugget of turn {record.turn_id} in the file",
            )
    if own:
        problems.raise_if_any()
    return result


def nuggets_jsonl_text(records: list[NuggetRecord]) -> str:
    lines = []
    for r in records:
        obj = {
            "turn_id": r.turn_id,
            "nugget_id": r.key,
            "text": r.text,
            "passage_id": r.passage_id or None,
            "start": r.start,
            "end": r.end,
            "relevance": r.relevance or None,
            "judge": r.judge,
            "duplicate_of": r.duplicate_of,
        }
        lines.append(json.dumps(obj, ensure_ascii=False) + "\n")
    return "".join(lines)


# --- Nuggets: CONE-RAG JSON ------------------------------------------------------------------------


def parse_nuggets_cone_rag(path: str | Path, *, problems: Problems | None = None) -> NuggetFile:
    """`{"<topic>_<turn>": {"[1]": {"text": "...", "relevance": "3"}, ...}, ...}`; a turn may be `{}`.

    Given `problems`, the file's problems are added there and the good nuggets returned (see
    `parse_nuggets`); otherwise they are raised here.
    """
    name = str(path)
    data = load_json(read_text(path), name)
    if not isinstance(data, dict):
        raise ImportFailed([f"{name}:1: expected a JSON object keyed by turn id"])
    own = problems is None
    problems = Problems(name) if problems is None else problems
    result = NuggetFile()
    for turn_id, nuggets in data.items():
        line = json_line(nuggets, json_line(data, 1))
        if problems.bad_id(line, turn_id, "turn id", MAX_TURN_ID):
            continue
        if not isinstance(nuggets, dict):
            problems.add(line, f'turn {turn_id}: expected an object of nuggets keyed like "[1]"')
            continue
        result.turns.append(turn_id)
        result.turn_lines[turn_id] = line
        for key, value in nuggets.items():
            vline = json_line(value, line)
            if problems.bad_id(vline, key, "nugget id", MAX_NUGGET_KEY):
                continue
            if not isinstance(value, dict) or not isinstance(value.get("text"), str):
                problems.add(
                    vline, f'turn {turn_id} nugget {key}: expected {{"text": ..., "relevance": ...}}'
                )
                continue
            relevance = value.get("relevance", "")
            if (
                not isinstance(relevance, str | int)
                or isinstance(relevance, bool)
                or len(str(relevance)) > MAX_NUGGET_RELEVANCE
            ):
                problems.add(
                    vline, f"turn {turn_id} nugget {key}: relevance {excerpt(relevance, 20)} is not a grade"
                )
                continue
            result.nuggets.append(
                NuggetRecord(
                    turn_id=turn_id, key=key, text=value["text"], relevance=str(relevance), line=vline
                )
            )
    if own:
        problems.raise_if_any()
    return result


def nuggets_cone_rag_text(turns: list[str], records: list[NuggetRecord]) -> str:
    """The published CONE-RAG layout: 4-space indent, ASCII escapes, no newline at the end."""
    data: dict[str, dict[str, dict[str, str]]] = {turn_id: {} for turn_id in turns}
    for r in records:
        data.setdefault(r.turn_id, {})[r.key] = {"text": r.text, "relevance": r.relevance}
    return json.dumps(data, indent=4)


def parse_nuggets(path: str | Path, fmt: str, *, problems: Problems | None = None) -> NuggetFile:
    """A nugget file in `fmt`. Given `problems`, the file's problems are added there and the good
    nuggets returned, so that an import can check their turns and spans against the database and
    report everything wrong in one pass; otherwise they are raised here."""
    if fmt == "jsonl":
        return parse_nuggets_jsonl(path, problems=problems)
    if fmt == "cone-rag":
        return parse_nuggets_cone_rag(path, problems=problems)
    raise ValueError(f"unknown nugget format {fmt!r}; expected one of {', '.join(FORMATS)}")


# --- Gold responses --------------------------------------------------------------------------------


def _string_list(value: Any) -> list[str] | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def parse_gold_responses_jsonl(
    path: str | Path, *, problems: Problems | None = None
) -> list[GoldResponseRecord]:
    """One gold response a line: {turn_id, response, nuggets: [nugget ids], draft}."""
    name = str(path)
    own = problems is None
    problems = Problems(name) if problems is None else problems
    records: list[GoldResponseRecord] = []
    seen: dict[str, int] = {}
    for line, obj in iter_jsonl(read_text(path), name, problems):
        turn_id = obj.get("turn_id")
        text = obj.get("response")
        keys = _string_list(obj.get("nuggets", []))
        if not isinstance(turn_id, str) or not turn_id:
            problems.add(line, "no 'turn_id'")
        elif problems.bad_id(line, turn_id, "turn id", MAX_TURN_ID):
            pass
        elif not isinstance(text, str):
            problems.add(line, f"turn {turn_id}: no 'response' text")
        elif keys is None:
            problems.add(line, f"turn {turn_id}: 'nuggets' must be a list of nugget ids")
        elif turn_id in seen:
            problems.add(line, f"turn {turn_id} appears twice (first on line {seen[turn_id]})")
        else:
            seen[turn_id] = line
            records.append(
                GoldResponseRecord(
                    turn_id=turn_id,
                    text=text,
                    nugget_keys=keys,
                    by_key=True,
                    is_draft=bool(obj.get("draft")),
                    line=line,
                )
            )
    if own:
        problems.raise_if_any()
    return records


def parse_gold_responses_cone_rag(
    path: str | Path, *, problems: Problems | None = None
) -> list[GoldResponseRecord]:
    """`{"<turn>": {"manual": {"response": "...", "nuggets": {"matched": [...], "not-matched": [...]}}}}`."""
    name = str(path)
    data = load_json(read_text(path), name)
    if not isinstance(data, dict):
        raise ImportFailed([f"{name}:1: expected a JSON object keyed by turn id"])
    own = problems is None
    problems = Problems(name) if problems is None else problems
    records: list[GoldResponseRecord] = []
    for turn_id, value in data.items():
        line = json_line(value, 1)
        if problems.bad_id(line, turn_id, "turn id", MAX_TURN_ID):
            continue
        manual = value.get("manual") if isinstance(value, dict) else None
        nuggets = manual.get("nuggets", {}) if isinstance(manual, dict) else None
        if not isinstance(manual, dict) or not isinstance(manual.get("response"), str):
            problems.add(line, f'turn {turn_id}: expected {{"manual": {{"response": ..., "nuggets": ...}}}}')
            continue
        matched = _string_list(nuggets.get("matched", [])) if isinstance(nuggets, dict) else None
        not_matched = _string_list(nuggets.get("not-matched", [])) if isinstance(nuggets, dict) else None
        if matched is None or not_matched is None:
            problems.add(
                json_line(nuggets, line),
                f"turn {turn_id}: 'matched' and 'not-matched' must be lists of texts",
            )
            continue
        records.append(
            GoldResponseRecord(
                turn_id=turn_id, text=manual["response"], matched=matched, not_matched=not_matched, line=line
            )
        )
    if own:
        problems.raise_if_any()
    return records


def parse_gold_responses(
    path: str | Path, fmt: str, *, problems: Problems | None = None
) -> list[GoldResponseRecord]:
    """Gold responses in `fmt`; `problems` as for `parse_nuggets`."""
    if fmt == "jsonl":
        return parse_gold_responses_jsonl(path, problems=problems)
    if fmt == "cone-rag":
        return parse_gold_responses_cone_rag(path, problems=problems)
    raise ValueError(f"unknown gold response format {fmt!r}; expected one of {', '.join(FORMATS)}")


def gold_responses_jsonl_text(records: list[GoldResponseRecord]) -> str:
    return "".join(
        json.dumps(
            {"turn_id": r.turn_id, "response": r.text, "nuggets": r.nugget_keys, "draft": r.is_draft},
            ensure_ascii=False,
        )
        + "\n"
        for r in records
    )


def gold_responses_cone_rag_text(records: list[GoldResponseRecord]) -> str:
    """The published layout of gold_response_and_nuggets_human.json (matched nuggets named by text)."""
    data = {
        r.turn_id: {
            "manual": {"nuggets": {"matched": r.matched, "not-matched": r.not_matched}, "response": r.text}
        }
        for r in records
    }
    return json.dumps(data, indent=4)
