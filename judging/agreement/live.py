"""The live agreement's figures as a stored report (judging/reports), so the page's poll every few seconds
reads stored JSON rather than every label of the task: the latest figures at once (marked "current":
false while newer labels are being computed), the new ones a poll or two later."""

from __future__ import annotations

from typing import Any

from annotation.models import Collection
from judging.agreement.reports import live_agreement
from judging.agreement.stored import agreement_reads
from judging.reports.store import ReportView, report_for

# Raise the version whenever the figures or their shape change.
LIVE = ("agreement-live", 1)


def _noop(done: int, total: int, word: str = "") -> None:
    """The progress of a computation made in the request: nobody follows it."""


def live_compute(*, collection: Collection, params: dict[str, Any], progress: Any = _noop) -> dict[str, Any]:
    """`live_agreement` of the task `params["task"]`."""
    return live_agreement(collection=collection, task=params["task"])


def live_stored(*, collection: Collection, task: str) -> ReportView:
    kind, version = LIVE
    return report_for(
        kind=kind,
        version=version,
        collection=collection,
        params={"task": task},
        reads=agreement_reads(),
        compute="judging.agreement.live.live_compute",
    )
