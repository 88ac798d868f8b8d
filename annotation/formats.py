"""Readers for the file formats the IR community exchanges, with file:line on every problem.

Parsers here only read and validate; they never touch the database. Each returns plain records and
raises `ImportFailed` listing every problem it found (up to a cap), so an import is all-or-nothing.
"""

from __future__ import annotations

import bisect
import json
import json.decoder
import json.scanner
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_PROBLEMS = 50


class ImportFailed(Exception):
    """An input file was rejected; `problems` are `path:line: message` strings."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        shown = problems[:MAX_PROBLEMS]
        more = f"\n... and {len(problems) - len(shown)} more" if len(problems) > len(shown) else ""
        super().__init__("\n".join(shown) + more)


@dataclass
class Problems:
    """Collects problems of one file and raises them together."""

    path: str
    items: list[str] = field(default_factory=list)

    def add(self, line: int | None, message: str) -> None:
        where = f"{self.path}:{line}" if line else self.path
        self.items.append(f"{where}: {message}")

    def raise_if_any(self) -> None:
        if self.items:
            raise ImportFailed(self.items)

    @property
    def full(self) -> bool:
        return len(self.items) >= MAX_PROBLEMS


def read_text(path: str | Path) -> str:
    """The file's text as UTF-8; a missing, empty or non-UTF-8 file is rejected with its line."""
    name = str(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise ImportFailed([f"{name}: no such file"]) from None
    except IsADirectoryError:
        raise ImportFailed([f"{name}: is a directory, not a file"]) from None
    if not data.strip():
        raise ImportFailed([f"{name}: the file is empty"])
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ImportFailed(
            [f"{name}:{line}: not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})"]
        ) from None


# --- JSON whose objects remember their line --------------------------------------------------------


class LineDict(dict):
    """A JSON object that knows the line it starts on."""

    line: int = 0


class _LineDecoder(json.JSONDecoder):
    def __init__(self, line_of: Any):
        super().__init__()

        def parse_object(s_and_end, strict, scan_once, object_hook, object_pairs_hook, memo=None):
            s, end = s_and_end
            pairs, new_end = json.decoder.JSONObject(s_and_end, strict, scan_once, None, list, memo)
            obj = LineDict(pairs)
            obj.line = line_of(end - 1)
            return obj, new_end

        self.parse_object = parse_object
        self.scan_once = json.scanner.py_make_scanner(self)


def load_json(text: str, path: str) -> Any:
    """Parse JSON; every object is a `LineDict` carrying its line, syntax errors name their line."""
    starts = [0]
    pos = text.find("\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = text.find("\n", pos + 1)

    def line_of(offset: int) -> int:
        return bisect.bisect_right(starts, offset)

    try:
        return _LineDecoder(line_of).decode(text)
    except json.JSONDecodeError as exc:
        raise ImportFailed([f"{path}:{exc.lineno}: invalid JSON: {exc.msg} (column {exc.colno})"]) from None


def iter_jsonl(text: str, path: str, problems: Problems) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; bad lines are recorded as problems."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.add(number, f"invalid JSON: {exc.msg} (column {exc.colno})")
            continue
        if not isinstance(obj, dict):
            problems.add(number, f"expected a JSON object, got {type(obj).__name__}")
            continue
        yield number, obj


def _line(obj: Any, default: int = 0) -> int:
    return getattr(obj, "line", default)


def _text(value: Any) -> str:
    return "" if value is None else str(value)


# --- Topics ----------------------------------------------------------------------------------------


@dataclass
class TurnRecord:
    turn_id: str
    position: int
    utterance: str
    resolved_utterance: str = ""
    response: str = ""
    response_provenance: list[Any] = field(default_factory=list)
    ptkb_provenance: list[Any] = field(default_factory=list)


@dataclass
class TopicRecord:
    number: str
    title: str
    ptkb: dict[str, str]
    turns: list[TurnRecord]


def parse_topics(path: str | Path) -> list[TopicRecord]:
    """iKAT topics JSON (2023 `"9-1"` or 2024 integer numbers) or a TREC `id<TAB>query` file."""
    name = str(path)
    text = read_text(path)
    if text.lstrip()[:1] in ("[", "{"):
        return _parse_ikat_topics(load_json(text, name), name)
    return _parse_tsv_topics(text, name)


def _parse_ikat_topics(data: Any, path: str) -> list[TopicRecord]:
    problems = Problems(path)
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
        line = _line(topic)
        if topic.get("number") in (None, ""):
            problems.add(line, "topic without 'number'")
            continue
        number = str(topic["number"]).strip()
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
            problems.add(_line(ptkb_raw, line), f"topic {number}: 'ptkb' must be an object of id: text")
            ptkb_raw = {}
        turns_raw = topic.get("turns")
        if not isinstance(turns_raw, list):
            problems.add(line, f"topic {number}: 'turns' must be a list")
            continue
        turns: list[TurnRecord] = []
        seen_turns: dict[str, int] = {}
        for position, turn in enumerate(turns_raw, start=1):
            tline = _line(turn, line)
            if not isinstance(turn, dict):
                problems.add(tline, f"topic {number}: turn {position} is not an object")
                continue
            if turn.get("turn_id") in (None, ""):
                problems.add(tline, f"topic {number}: turn {position} has no 'turn_id'")
                continue
            turn_id = f"{number}_{str(turn['turn_id']).strip()}"
            if turn_id in seen_turns:
                problems.add(tline, f"duplicate turn id {turn_id} (first on line {seen_turns[turn_id]})")
                continue
            seen_turns[turn_id] = tline
            if not _text(turn.get("utterance")).strip():
                problems.add(tline, f"turn {turn_id} has no 'utterance'")
                continue
            turns.append(
                TurnRecord(
                    turn_id=turn_id,
                    position=position,
                    utterance=_text(turn.get("utterance")),
                    resolved_utterance=_text(turn.get("resolved_utterance")),
                    response=_text(turn.get("response")),
                    response_provenance=list(turn.get("response_provenance") or []),
                    ptkb_provenance=[str(p) for p in turn.get("ptkb_provenance") or []],
                )
            )
        topics.append(
            TopicRecord(
                number=number,
                title=_text(topic.get("title")),
                ptkb={str(k): _text(v) for k, v in ptkb_raw.items()},
                turns=turns,
            )
        )
    problems.raise_if_any()
    if not topics:
        raise ImportFailed([f"{path}: no topics in the file"])
    return topics


def _parse_tsv_topics(text: str, path: str) -> list[TopicRecord]:
    problems = Problems(path)
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
        if qid in seen:
            problems.add(number, f"duplicate topic id {qid} (first on line {seen[qid]})")
            continue
        seen[qid] = number
        topics.append(TopicRecord(number=qid, title=query, ptkb={}, turns=[TurnRecord(qid, 1, query)]))
    problems.raise_if_any()
    return topics


# --- Passages --------------------------------------------------------------------------------------


@dataclass
class PassageRecord:
    passage_id: str
    title: str
    text: str


def parse_passages(path: str | Path) -> list[PassageRecord]:
    """Passages JSONL: iKAT `{doc_id, passage_id, passage_text}` or `{id, text|contents, title?}`."""
    name = str(path)
    text = read_text(path)
    problems = Problems(name)
    seen: dict[str, int] = {}
    records: list[PassageRecord] = []
    for line, obj in iter_jsonl(text, name, problems):
        if "doc_id" in obj and "passage_id" in obj:
            pid = f"{_text(obj['doc_id']).strip()}:{_text(obj['passage_id']).strip()}"
            body = obj.get("passage_text", obj.get("text", obj.get("contents")))
        elif "id" in obj or "docid" in obj or "_id" in obj:
            pid = _text(obj.get("id", obj.get("docid", obj.get("_id")))).strip()
            body = obj.get("text", obj.get("contents", obj.get("segment")))
        else:
            problems.add(line, "no passage id: expected 'doc_id' and 'passage_id', or 'id'")
            continue
        if not pid or pid == ":":
            problems.add(line, "empty passage id")
            continue
        if not isinstance(body, str):
            problems.add(line, f"passage {pid} has no text ('passage_text', 'text' or 'contents')")
            continue
        if pid in seen:
            problems.add(line, f"passage {pid} appears twice (first on line {seen[pid]})")
            continue
        seen[pid] = line
        records.append(PassageRecord(pid, _text(obj.get("title")), body))
        if problems.full:
            break
    problems.raise_if_any()
    return records


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


def parse_run(path: str | Path, name: str | None = None) -> list[RunRecord]:
    """A TREC run, an iKAT JSON run, or TREC RAG 2024 answers JSONL (one or more runs)."""
    pathname = str(path)
    text = read_text(path)
    head = text.lstrip()[:1]
    if head in ("{", "["):
        try:
            first = json.loads(text.lstrip().split("\n", 1)[0])
        except json.JSONDecodeError:
            first = None
        if isinstance(first, dict) and "answer" in first:
            return _parse_rag_answers(text, pathname, name)
        return [_parse_ikat_json_run(text, pathname, name)]
    return [_parse_trec_run(text, pathname, name)]


def _parse_trec_run(text: str, path: str, name: str | None) -> RunRecord:
    problems = Problems(path)
    lists: dict[str, list[tuple[int, float, str]]] = {}
    turn_lines: dict[str, int] = {}
    tags: set[str] = set()
    seen: set[tuple[str, str]] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 6:
            problems.add(number, f"expected 6 columns 'qid Q0 docid rank score tag', found {len(parts)}")
        else:
            qid, _q0, docid, rank_s, score_s, tag = parts
            try:
                rank = int(rank_s)
            except ValueError:
                problems.add(number, f"rank {rank_s!r} is not an integer")
                continue
            try:
                score = float(score_s)
            except ValueError:
                problems.add(number, f"score {score_s!r} is not a number")
                continue
            if (qid, docid) in seen:
                problems.add(number, f"document {docid} ranked twice for {qid}")
                continue
            seen.add((qid, docid))
            if qid not in lists:
                lists[qid] = []
                turn_lines[qid] = number
            lists[qid].append((rank, -score, docid))
            tags.add(tag)
        if problems.full:
            break
    problems.raise_if_any()
    if not lists:
        raise ImportFailed([f"{path}: no run lines"])
    if name is None and len(tags) > 1:
        raise ImportFailed(
            [f"{path}: the file holds several run tags ({', '.join(sorted(tags))}); pass --name"]
        )
    rankings: dict[str, tuple[list[str], list[float]]] = {}
    for qid, rows in lists.items():
        rows.sort()
        rankings[qid] = ([r[2] for r in rows], [-r[1] for r in rows])
    return RunRecord(
        name=name or next(iter(tags)),
        kind="automatic",
        source_format="trec",
        rankings=rankings,
        turn_lines=turn_lines,
    )


def _parse_ikat_json_run(text: str, path: str, name: str | None) -> RunRecord:
    data = load_json(text, path)
    problems = Problems(path)
    if not isinstance(data, dict) or not isinstance(data.get("turns"), list):
        raise ImportFailed([f"{path}:1: expected an iKAT run object with 'run_name' and 'turns'"])
    run_name = name or _text(data.get("run_name")).strip()
    if not run_name:
        raise ImportFailed([f"{path}:1: the run has no 'run_name'; pass --name"])
    run_type = _text(data.get("run_type") or "automatic").strip().lower().replace("_", "-")
    if run_type not in {"automatic", "manual", "generation-only"}:
        problems.add(_line(data, 1), f"run_type {run_type!r} is not automatic, manual or generation-only")
    record = RunRecord(name=run_name, kind=run_type, source_format="ikat-json")
    for turn in data["turns"]:
        line = _line(turn, 1)
        if not isinstance(turn, dict) or turn.get("turn_id") in (None, ""):
            problems.add(line, "turn without 'turn_id'")
            continue
        turn_id = _text(turn["turn_id"]).strip()
        if turn_id in record.turn_lines:
            problems.add(line, f"turn {turn_id} appears twice (first on line {record.turn_lines[turn_id]})")
            continue
        record.turn_lines[turn_id] = line
        best: list[tuple[float, str]] = []
        seen: set[str] = set()
        for response in turn.get("responses") or []:
            rline = _line(response, line)
            if not isinstance(response, dict):
                problems.add(rline, f"turn {turn_id}: every response must be an object")
                continue
            try:
                rank = int(response.get("rank", 1))
            except (TypeError, ValueError):
                problems.add(rline, f"response rank {response.get('rank')!r} is not an integer")
                continue
            used: list[str] = []
            for prov in response.get("passage_provenance") or []:
                if not isinstance(prov, dict):
                    problems.add(
                        rline, f"turn {turn_id}: passage_provenance entries must be objects with 'id'"
                    )
                    continue
                pid = _text(prov.get("id")).strip()
                if not pid:
                    problems.add(_line(prov, rline), "passage_provenance entry without 'id'")
                    continue
                try:
                    score = float(prov.get("score", 0.0))
                except (TypeError, ValueError):
                    problems.add(_line(prov, rline), f"score {prov.get('score')!r} is not a number")
                    continue
                if prov.get("used"):
                    used.append(pid)
                if pid not in seen:
                    seen.add(pid)
                    best.append((score, pid))
            text_value = _text(response.get("text"))
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
    problems.raise_if_any()
    return record


def _parse_rag_answers(text: str, path: str, name: str | None) -> list[RunRecord]:
    problems = Problems(path)
    runs: dict[str, RunRecord] = {}
    seen: dict[tuple[str, str], int] = {}
    for line, obj in iter_jsonl(text, path, problems):
        run_id = name or _text(obj.get("run_id")).strip()
        topic_id = _text(obj.get("topic_id")).strip()
        if not run_id:
            problems.add(line, "answer without 'run_id'; pass --name")
            continue
        if not topic_id:
            problems.add(line, "answer without 'topic_id'")
            continue
        if (run_id, topic_id) in seen:
            problems.add(
                line, f"run {run_id} answers topic {topic_id} twice (first on line {seen[run_id, topic_id]})"
            )
            continue
        seen[run_id, topic_id] = line
        references = [_text(r).strip() for r in obj.get("references") or []]
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
                    problems.add(line, f"sentence {index}: citation {citation!r} is not an index")
                elif not 0 <= citation < len(references):
                    problems.add(
                        line,
                        f"sentence {index}: citation {citation} is outside 'references' "
                        f"({len(references)} entries)",
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
                topic_title=_text(obj.get("topic")),
            )
        )
        if problems.full:
            break
    problems.raise_if_any()
    if not runs:
        raise ImportFailed([f"{path}: no answers in the file"])
    return list(runs.values())


# --- Qrels -----------------------------------------------------------------------------------------


@dataclass
class QrelRecord:
    turn_id: str
    passage_id: str
    grade: int
    line: int


def parse_qrels(path: str | Path, *, min_grade: int = 0, max_grade: int = 4) -> list[QrelRecord]:
    """TREC qrels `qid 0 docid grade`, any whitespace; grades outside the scale are rejected."""
    name = str(path)
    text = read_text(path)
    problems = Problems(name)
    records: list[QrelRecord] = []
    seen: dict[tuple[str, str], int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 4:
            problems.add(number, f"expected 4 columns 'qid 0 docid grade', found {len(parts)}")
            continue
        qid, _iteration, docid, grade_s = parts
        try:
            grade = int(grade_s)
        except ValueError:
            problems.add(number, f"grade {grade_s!r} is not an integer")
            continue
        if not min_grade <= grade <= max_grade:
            problems.add(number, f"grade {grade} is outside the scale {min_grade}-{max_grade}")
            continue
        key = (qid, docid)
        if key in seen:
            problems.add(number, f"{qid} {docid} is judged twice (first on line {seen[key]})")
            continue
        seen[key] = number
        records.append(QrelRecord(qid, docid, grade, number))
        if problems.full:
            break
    problems.raise_if_any()
    return records
