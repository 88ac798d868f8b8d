"""The CONE-RAG crowd study's published files: participants' responses and the crowd's NtR labels.

- Responses: `{"<topic>_<turn>": {"<run name>": "<response text>"}}`, one response per run and turn,
  stored as rank-1 Responses of generation-only runs.
- Labels: TSV lines `<batch>_<topic>_<turn>_<nuggetIndex>_<runAlias>\t<0|1>`, where the nugget index is
  the 1-based key `[k]` of the gold nugget set and the run alias is mapped to a run on the command line;
  stored as NtrJudgments of a crowd judge (`mturk-majority` in the study).

Both imports are all-or-nothing with `path:line` problems (annotation/formats/base.py) and idempotent: the
same file twice changes nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from annotation.formats.base import MAX_RUN_NAME, ImportFailed, LineDict, Problems, load_json, read_text
from annotation.judge_access import ImportJudgeRefused
from annotation.models import Collection, Judge, Nugget, Response, Run, Turn
from annotation.nuggets.writer import NtrRow, ntr_judgments_upsert
from annotation.services import ImportResult, judge_get_or_create
from crowd.campaigns.models import LABEL_JUDGE_BY_PROVIDER, WORKER_JUDGE_PREFIX
from crowd.models import CrowdCampaign

SOURCE_FORMAT = "cone-rag"


# --- parsing ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResponseRecord:
    line: int
    turn_line: int
    turn_id: str
    run: str
    text: str


def _key_line(text: str, starts: list[int], key: str, from_line: int) -> int:
    """The line of `"key":` at or after `from_line`; the file's objects only know their opening line."""
    offset = starts[from_line - 1] if 0 < from_line <= len(starts) else 0
    pattern = re.compile(re.escape(_json_string(key)) + r"\s*:")
    found = pattern.search(text, offset)
    if found is None:
        return from_line
    return text.count("\n", 0, found.start()) + 1


def _json_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def parse_responses(path: str | Path, *, problems: Problems | None = None) -> list[ResponseRecord]:
    """Read a CONE-RAG responses file; every problem is reported with its line.

    Given `problems`, the file's problems are added there and the good records returned, so that an
    import can check their turns too and report everything wrong in one pass; otherwise they are raised.
    """
    name = str(path)
    text = read_text(path)
    data = load_json(text, name)
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    own = problems is None
    problems = Problems(name) if problems is None else problems
    if not isinstance(data, dict):
        raise ImportFailed(
            [f'{name}:1: expected an object {{"<topic>_<turn>": {{"<run name>": "<response text>"}}}}']
        )
    records: list[ResponseRecord] = []
    for turn_id, runs in data.items():
        turn_line = runs.line if isinstance(runs, LineDict) else _key_line(text, starts, turn_id, 1)
        if not turn_id.strip():
            problems.add(turn_line, "empty turn id")
            continue
        if not isinstance(runs, dict):
            problems.add(turn_line, f"turn {turn_id}: expected an object of run name to response text")
            continue
        for run, response in runs.items():
            line = _key_line(text, starts, run, turn_line)
            if not run.strip():
                problems.add(line, f"turn {turn_id}: empty run name")
            elif problems.bad_id(line, run, "run name", MAX_RUN_NAME):
                continue
            elif not isinstance(response, str):
                problems.add(
                    line,
                    f"turn {turn_id}, run {run}: response must be a string, not {type(response).__name__}",
                )
            else:
                records.append(
                    ResponseRecord(line=line, turn_line=turn_line, turn_id=turn_id, run=run, text=response)
                )
    if not records and not problems.items:
        problems.add(1, "no responses in the file")
    if own:
        problems.raise_if_any()
    return records


@dataclass(frozen=True)
class LabelRecord:
    line: int
    batch: str
    turn_id: str
    nugget_index: int
    alias: str
    matched: bool


def parse_labels(path: str | Path, *, problems: Problems | None = None) -> list[LabelRecord]:
    """Read a CONE-RAG label file; a pair labelled twice must carry the same label both times.

    `problems` as for `parse_responses`.
    """
    name = str(path)
    text = read_text(path)
    own = problems is None
    problems = Problems(name) if problems is None else problems
    records: list[LabelRecord] = []
    seen: dict[tuple[str, int, str], LabelRecord] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        fields = raw.split("\t") if "\t" in raw else raw.split()
        fields = [f.strip() for f in fields]
        if len(fields) != 2:
            problems.add(
                number, "expected two tab-separated fields: <batch>_<topic>_<turn>_<nugget>_<run>, 0|1"
            )
            continue
        key, value = fields
        # Topic numbers may hold underscores in other collections: the turn id is everything between
        # the batch (first part) and the nugget index and run alias (last two parts).
        parts = key.split("_")
        if len(parts) < 5 or not all(parts):
            problems.add(number, f"key {key!r} is not <batch>_<topic>_<turn>_<nuggetIndex>_<runAlias>")
            continue
        batch, index, alias = parts[0], parts[-2], parts[-1]
        turn_id = "_".join(parts[1:-2])
        # ASCII digits only: '²' passes isdigit() but int() cannot read it.
        if not (index.isascii() and index.isdigit()) or int(index) < 1:
            problems.add(
                number, f"nugget index {index!r} must be a positive integer (the [k] of the nugget set)"
            )
            continue
        if value not in {"0", "1"}:
            problems.add(number, f"label {value!r} must be 0 or 1")
            continue
        record = LabelRecord(number, batch, turn_id, int(index), alias, value == "1")
        unit = (turn_id, record.nugget_index, alias)
        earlier = seen.get(unit)
        if earlier is not None:
            if earlier.matched != record.matched:
                problems.add(number, f"{key}: contradicts the label of the same pair on line {earlier.line}")
            continue
        seen[unit] = record
        records.append(record)
    if not records and not problems.items:
        problems.add(None, "no labels in the file")
    if own:
        problems.raise_if_any()
    return records


def parse_aliases(values: list[str]) -> dict[str, str]:
    """`A=run_name` pairs as {alias: run name}; raises ValueError naming the bad one."""
    aliases: dict[str, str] = {}
    for value in values:
        alias, sep, run = value.partition("=")
        alias, run = alias.strip(), run.strip()
        if not sep or not alias or not run:
            raise ValueError(f"--alias {value!r} is not ALIAS=RUN_NAME")
        if alias in aliases and aliases[alias] != run:
            raise ValueError(f"alias {alias!r} is given twice, for {aliases[alias]!r} and {run!r}")
        aliases[alias] = run
    return aliases


# --- imports ---------------------------------------------------------------------------------------


def _turns(collection: Collection, problems: Problems, wanted: Mapping[str, int]) -> dict[str, Turn]:
    turns = {t.turn_id: t for t in Turn.objects.filter(collection=collection, turn_id__in=list(wanted))}
    for turn_id, line in sorted(wanted.items(), key=lambda item: item[1]):
        if turn_id not in turns:
            problems.add(
                line, f"turn {turn_id} is not in collection {collection.name} (import its topics first)"
            )
    return turns


@transaction.atomic
def cone_rag_responses_import(*, path: str | Path, collection: Collection) -> ImportResult:
    """Store CONE-RAG participant responses as rank-1 responses of their runs.

    Missing runs are created as generation-only runs; a response whose text changed is updated in
    place (so labels given to it stay attached) and loses its sentence split, which described the old
    text.
    """
    problems = Problems(str(path))
    records = parse_responses(path, problems=problems)
    wanted: dict[str, int] = {}
    for record in records:
        wanted.setdefault(record.turn_id, record.turn_line)
    turns = _turns(collection, problems, wanted)
    problems.raise_if_any()
    runs = {r.name: r for r in Run.objects.filter(collection=collection, name__in={r.run for r in records})}
    for name in sorted({r.run for r in records} - set(runs)):
        runs[name] = Run.objects.create(
            collection=collection, name=name, kind=Run.Kind.GENERATION_ONLY, source_format=SOURCE_FORMAT
        )
    existing = {
        (r.run_id, r.turn_id): r
        for r in Response.objects.filter(run__in=list(runs.values()), turn__in=list(turns.values()), rank=1)
    }
    result = ImportResult()
    created: list[Response] = []
    for record in records:
        run, turn = runs[record.run], turns[record.turn_id]
        current = existing.get((run.id, turn.id))
        if current is None:
            created.append(Response(run=run, turn=turn, rank=1, text=record.text))
        elif current.text == record.text:
            result.unchanged += 1
        else:
            current.text = record.text
            current.save(update_fields=["text"])
            current.sentences.all().delete()
            result.updated += 1
    Response.objects.bulk_create(created, batch_size=500)
    result.created += len(created)
    return result


@transaction.atomic
def cone_rag_labels_import(
    *,
    path: str | Path,
    collection: Collection,
    nugget_judge: Judge,
    label_judge_name: str,
    aliases: Mapping[str, str],
) -> ImportResult:
    """Store the crowd's CONE-RAG NtR labels as judgments of the crowd judge `label_judge_name`.

    Each line names a response by turn and run alias (the run's rank-1 response, as the responses
    import stores it) and a gold nugget of `nugget_judge` by its 1-based CONE-RAG key `[k]`.
    """
    pathname = str(path)
    problems = Problems(pathname)
    records = parse_labels(path, problems=problems)
    runs = {r.name: r for r in Run.objects.filter(collection=collection, name__in=set(aliases.values()))}
    for alias, name in sorted(aliases.items()):
        if name not in runs:
            problems.add(
                None, f"--alias {alias}={name}: no run named {name!r} in collection {collection.name}"
            )
    wanted: dict[str, int] = {}
    for record in records:
        wanted.setdefault(record.turn_id, record.line)
    turns = _turns(collection, problems, wanted)
    nuggets = {
        (n.turn_id, n.key): n
        for n in Nugget.objects.filter(judge=nugget_judge, turn__in=list(turns.values())).only(
            "id", "turn_id", "key"
        )
    }
    responses: dict[tuple[int, int], int] = {}
    for pk, run_id, turn_id in (
        Response.objects.filter(run__in=list(runs.values()), turn__in=list(turns.values()))
        .order_by("-rank")
        .values_list("id", "run_id", "turn_id")
    ):
        responses[(run_id, turn_id)] = pk  # the lowest rank wins, being written last
    units: list[tuple[int, str, int, int, bool]] = []
    for record in records:
        turn = turns.get(record.turn_id)
        if turn is None:
            continue  # reported above, once per turn
        if record.alias not in aliases:
            problems.add(
                record.line, f"run alias {record.alias!r} is not mapped: add --alias {record.alias}=RUN"
            )
            continue
        run = runs.get(aliases[record.alias])
        if run is None:
            continue  # its --alias is reported above

        nugget = nuggets.get((turn.id, f"[{record.nugget_index}]"))
        if nugget is None:
            problems.add(
                record.line,
                f"turn {record.turn_id} has no nugget [{record.nugget_index}] of judge {nugget_judge.name}",
            )
            continue
        response_id = responses.get((run.id, turn.id))
        if response_id is None:
            problems.add(
                record.line,
                f"run {run.name} has no response for turn {record.turn_id} (import the responses first)",
            )
            continue
        units.append((record.line, record.alias, response_id, nugget.id, record.matched))
    # Two aliases mapped to one run could label the same pair: they must agree, and the first one counts.
    seen: dict[tuple[int, int], tuple[bool, int, str]] = {}
    for line, alias, response_id, nugget_id, matched in units:
        first = seen.setdefault((response_id, nugget_id), (matched, line, alias))
        if first[0] != matched:
            problems.add(line, f"contradicts the label of the same response and nugget on line {first[1]}")
    problems.raise_if_any()
    refusal = campaign_judge_refusal(label_judge_name)
    if refusal:
        raise ImportFailed([f"{pathname}: {refusal}"])
    try:
        judge = judge_get_or_create(
            name=label_judge_name,
            kind=Judge.Kind.CROWD,
            description=f"Crowd NtR labels imported from {Path(pathname).name}; run aliases: "
            + alias_mapping_text(aliases),
        )
    except ImportJudgeRefused as exc:
        raise ImportFailed([f"{pathname}: {exc}"]) from None
    if judge.kind != Judge.Kind.CROWD:
        raise ImportFailed([f"{pathname}: judge {label_judge_name!r} exists and is not a crowd judge"])
    # The file names runs only by alias: each alias is reported with its run, one outcome row apiece, so
    # the organiser sees which run each alias's labels went to (and an alias the file never used).
    by_alias: dict[str, list[NtrRow]] = {alias: [] for alias in sorted(aliases)}
    for (response_id, nugget_id), (matched, _, alias) in seen.items():
        by_alias[alias].append(NtrRow(response_id=response_id, nugget_id=nugget_id, matched=matched))
    result = ImportResult()
    for alias, rows in by_alias.items():
        written = ntr_judgments_upsert(judge=judge, rows=rows)
        kind = alias_kind(alias, aliases[alias])
        for outcome in ("created", "updated", "unchanged"):
            result.count(kind, outcome, getattr(written, outcome))
    return result


def campaign_judge_refusal(name: str) -> str | None:
    """Why a label file may not be imported as crowd judge `name` (None when it may): the judge is a
    campaign's majority, the platform workers' default majority, or one worker's votes. Their labels are
    recomputed from the campaign's answers, so a file's labels there would be mixed with the workers' own
    and then overwritten or counted as theirs."""
    if name == LABEL_JUDGE_BY_PROVIDER[CrowdCampaign.Provider.PLATFORM]:
        return f"judge {name!r} holds the majority of the platform's own crowd campaigns; name another judge"
    if any(name.startswith(f"{prefix}:") for prefix in WORKER_JUDGE_PREFIX.values()):
        return f"judge names like {name!r} hold one crowd worker's own votes; name another judge"
    owner = CrowdCampaign.objects.filter(label_judge__name=name).values_list("name", flat=True).first()
    if owner is not None:
        return f"judge {name!r} holds the majority of crowd campaign {owner!r}; name another judge"
    return None


def alias_mapping_text(aliases: Mapping[str, str]) -> str:
    """`A = run-x, B = run-y`: the mapping as organisers read it on pages and in judge descriptions."""
    return ", ".join(f"{alias} = {run}" for alias, run in sorted(aliases.items()))


def alias_kind(alias: str, run: str) -> str:
    return f"NtR labels, alias {alias} → run {run}"
