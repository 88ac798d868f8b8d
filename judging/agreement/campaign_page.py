"""What the campaign page reads of the stored campaign report: each section's heading and number of pairs,
and the page of its pairs the query string asks for, in two queries whatever the number of judges (every
pair of 55 judges is some 1500 rows a section). The downloads (JSON, the whole report as one HTML page)
give every pair.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from core.pagination import page_of, positions_of
from judging.reports.models import ReportResult
from judging.reports.store import report_parts

PAIRS_PER_PAGE = 25
# What the page shows of each section beside its rows (campaign_report's section keys).
SECTION_KEYS = ("title", "task", "condition", "binary_threshold", "measure", "ordinal")


def section_page_param(index: int) -> str:
    """The query parameter naming the page of section `index` (each section pages on its own)."""
    return f"pairs-{index}"


def campaign_shown(*, request: HttpRequest, report: ReportResult) -> dict[str, Any]:
    """The report as the page draws it: {"collection", "generated_at", "sections": [{...the section's
    keys, "rows": a page of its pairs, "total": its pairs, "pager", "anchor"}]}."""
    head = report_parts(
        report=report,
        parts={
            "collection": "$.collection",
            "generated_at": "$.generated_at",
            "totals": "$.sections[*].rows.size()",
            **{key: f"$.sections[*].{key}" for key in SECTION_KEYS},
        },
    )
    sections: list[dict[str, Any]] = [
        dict(zip(SECTION_KEYS, values, strict=True))
        for values in zip(*(head[key] for key in SECTION_KEYS), strict=True)
    ]
    for index, (section, total) in enumerate(zip(sections, head["totals"], strict=True)):
        anchor = f"section-{index}"
        section.update(
            total=total,
            anchor=anchor,
            pager=page_of(
                request,
                range(total),
                param=section_page_param(index),
                anchor=anchor,
                per_page=PAIRS_PER_PAGE,
            ),
        )
    rows = report_parts(
        report=report,
        parts={
            str(index): (f"$.sections[{index}].rows", positions_of(section["pager"]))
            for index, section in enumerate(sections)
        },
    )
    for index, section in enumerate(sections):
        section["rows"] = rows[str(index)]
    return {
        "collection": next(iter(head["collection"]), ""),
        "generated_at": next(iter(head["generated_at"]), ""),
        "sections": sections,
    }
