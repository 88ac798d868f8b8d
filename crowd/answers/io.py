"""MTurk's CSV formats: the batch input CSV and the results CSV downloaded from the requester site.

Input CSV: one row per batch, with `batch` and `response_<n>` / `nugget_<n>` for n = 1..size; an MTurk
layout names them `${response_1}` and so on. Results CSV: `HITId, HITTypeId, AssignmentId, WorkerId,
AssignmentStatus, AcceptTime, SubmitTime, WorkTimeInSeconds, Input.*, Answer.*`, with answers
`Answer.q<n>` = yes / no. Importing results is all-or-nothing, names file and line of each problem, and
is idempotent (the same file twice adds nothing).

Both exports go through core.csv_safe: worker ids, response and nugget texts come from
outside, and a cell a spreadsheet would run as a formula is written as text. Every row fills the header
(a smaller last batch gets empty cells), as MTurk's batch upload requires.
"""

from __future__ import annotations

import csv
import io
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from django.db import transaction

from annotation.formats.base import Problems, read_text
from core.csv_safe import csv_writer
from crowd.answers.services import answers_from_fields, assignment_confirm
from crowd.errors import CrowdError
from crowd.models import CrowdAssignment, CrowdBatch, CrowdCampaign

RESULT_COLUMNS = [
    "HITId",
    "HITTypeId",
    "AssignmentId",
    "WorkerId",
    "AssignmentStatus",
    "AcceptTime",
    "SubmitTime",
    "WorkTimeInSeconds",
]
REQUIRED_RESULT_COLUMNS = [
    "HITId",
    "AssignmentId",
    "WorkerId",
    "AcceptTime",
    "SubmitTime",
    "WorkTimeInSeconds",
]
# MTurk writes times like "Wed Mar 06 07:14:22 PST 2024".
ZONES = {"PST": -8, "PDT": -7, "UTC": 0, "GMT": 0}
MTURK_TIME = "%a %b %d %H:%M:%S %Y"


def format_time(value: datetime | None) -> str:
    if value is None:
        return ""
    return value.astimezone(UTC).strftime("%a %b %d %H:%M:%S UTC %Y")


def parse_time(value: str) -> datetime | None:
    text = value.strip()
    if not text:
        return None
    match = re.fullmatch(r"(\w{3} \w{3} \d{1,2} \d{2}:\d{2}:\d{2}) (\w{3,4}) (\d{4})", text)
    if match and match.group(2) in ZONES:
        naive = datetime.strptime(f"{match.group(1)} {match.group(3)}", MTURK_TIME)
        return naive.replace(tzinfo=timezone(timedelta(hours=ZONES[match.group(2)])))
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise CrowdError(f"time {value!r} is neither MTurk's format nor ISO 8601") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def input_csv(*, campaign: CrowdCampaign) -> str:
    """The batch input CSV of a campaign (for an MTurk layout instead of our ExternalQuestion page)."""
    size = max((b.items.count() for b in campaign.batches.all()), default=0)
    out = io.StringIO()
    writer = csv_writer(out, lineterminator="\n")
    header = ["batch", *[f"{kind}_{n}" for n in range(1, size + 1) for kind in ("response", "nugget")]]
    writer.writerow(header)
    for batch in campaign.batches.order_by("index"):
        row = [str(batch.index)]
        for item in batch.items.select_related("response", "nugget", "test_question").order_by("position"):
            row += [item.response_text, item.nugget_text]
        writer.writerow(row + [""] * (len(header) - len(row)))
    return out.getvalue()


def results_csv(*, campaign: CrowdCampaign) -> str:
    """The campaign's assignments in the results CSV shape MTurk's requester site downloads.

    Provisional answers of the HIT page are left out: MTurk has not reported them."""
    size = max((b.items.count() for b in campaign.batches.all()), default=0)
    out = io.StringIO()
    writer = csv_writer(out, lineterminator="\n")
    writer.writerow([*RESULT_COLUMNS, "Input.batch", *[f"Answer.q{n}" for n in range(1, size + 1)]])
    assignments = (
        CrowdAssignment.objects.filter(batch__campaign=campaign)
        .exclude(status=CrowdAssignment.Status.ACCEPTED)
        .select_related("batch", "worker")
        .prefetch_related("answers__item")
        .order_by("batch__index", "id")
    )
    for a in assignments:
        votes = {
            answer.item.position: answer.support or ("yes" if answer.matched else "no")
            for answer in a.answers.all()
        }
        seconds = a.work_seconds
        writer.writerow(
            [
                a.batch.hit_id,
                campaign.hit_type_id,
                a.assignment_id,
                a.worker.worker_id,
                a.status,
                format_time(a.accept_time),
                format_time(a.submit_time),
                "" if seconds is None else str(int(seconds)),
                str(a.batch.index),
                *[votes.get(p, "") for p in range(size)],
            ]
        )
    return out.getvalue()


def results_csv_import(*, campaign: CrowdCampaign, path: str | Path) -> int:
    """Store the answers of a results CSV; returns the number of assignments in the file."""
    name = str(path)
    text = read_text(path)
    problems = Problems(name)
    reader = csv.DictReader(io.StringIO(text))
    header = reader.fieldnames or []
    missing = [c for c in REQUIRED_RESULT_COLUMNS if c not in header]
    if missing:
        problems.add(1, f"missing columns {', '.join(missing)}")
        problems.raise_if_any()
    batches_by_hit = {b.hit_id: b for b in campaign.batches.exclude(hit_id="")}
    batches_by_index = {str(b.index): b for b in campaign.batches.all()}
    rows = []
    for line, row in enumerate(reader, start=2):
        batch: CrowdBatch | None = batches_by_hit.get(row["HITId"]) or batches_by_index.get(
            (row.get("Input.batch") or "").strip()
        )
        if batch is None:
            problems.add(
                line, f"HIT {row['HITId']!r} / Input.batch is not a batch of campaign {campaign.name}"
            )
            continue
        fields = {k[len("Answer.") :]: v for k, v in row.items() if k and k.startswith("Answer.")}
        try:
            answers, times = answers_from_fields(fields, size=batch.items.count(), kind=campaign.kind)
            accept, submit = parse_time(row["AcceptTime"]), parse_time(row["SubmitTime"])
        except CrowdError as exc:
            problems.add(line, str(exc))
            continue
        if not row["AssignmentId"].strip() or not row["WorkerId"].strip():
            problems.add(line, "AssignmentId and WorkerId must not be empty")
            continue
        status = row.get("AssignmentStatus") or CrowdAssignment.Status.SUBMITTED
        if status not in CrowdAssignment.Status.values:
            problems.add(line, f"unknown AssignmentStatus {status!r}")
            continue
        rows.append((line, batch, row, answers, times, accept, submit, status))
    problems.raise_if_any()
    with transaction.atomic():
        for line, batch, row, answers, times, accept, submit, status in rows:
            try:
                assignment_confirm(
                    batch=batch,
                    worker_id=row["WorkerId"].strip(),
                    answers=answers,
                    times_ms=times,
                    assignment_id=row["AssignmentId"].strip(),
                    status=status,
                    accept_time=accept,
                    submit_time=submit,
                )
            except CrowdError as exc:
                problems.add(line, str(exc))
        # Any problem found while storing undoes the whole file.
        if problems.items:
            transaction.set_rollback(True)
    problems.raise_if_any()
    return len(rows)
