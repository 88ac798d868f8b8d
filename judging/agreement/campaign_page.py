"""What the campaign page reads of the stored campaign report: each section's heading and number of pairs,
and the page of its pairs the query string asks for, in one query whatever the number of judges (every
pair of 55 judges is some 1500 rows a section, and each read of the stored JSON decompresses it whole, so
the page reads it once). The downloads (JSON, the whole report as one HTML page) give every pair.
"""

from __future__ import annotations

import re
from typing import Any

from django.http import HttpRequest

from core.pagination import page_of, positions_of
from judging.reports.models import ReportResult
from judging.reports.store import report_parts

PAIRS_PER_PAGE = 25
# What the page shows of each section beside its rows (campaign_report's section keys).
SECTION_KEYS = ("title", "task", "condition", "binary_threshold", "measure", "ordinal")
# The most sections whose later pages are read with the rest: the report has about ten sections.
ASKED_AT_ONCE = 20
PAGE_PARAM = re.compile(r"pairs-(\d{1,3})")


def section_page_param(index: int) -> str:
    """The query parameter naming the page of section `index` (each section pages on its own)."""
    return f"pairs-{index}"


def _asked(request: HttpRequest) -> dict[int, int]:
    """The later pages the query string asks for, by section: read with the headings, in the same query."""
    asked: dict[int, int] = {}
    for param in request.GET:
        value = request.GET.get(param, "")
        match = PAGE_PARAM.fullmatch(param)
        if match and value.isdigit() and int(value) > 1 and len(asked) < ASKED_AT_ONCE:
            asked[int(match.group(1))] = int(value)
    return asked


def _positions(number: int) -> range:
    return range((number - 1) * PAIRS_PER_PAGE, number * PAIRS_PER_PAGE)


def campaign_shown(*, request: HttpRequest, report: ReportResult) -> dict[str, Any]:
    """The report as the page draws it: {"collection", "generated_at", "sections": [{...the section's
    keys, "rows": a page of its pairs, "total": its pairs, "pager", "anchor"}]}.

    One query reads the headings, every section's first page and the later pages the query string names;
    a second only when a page named is past a section's last (the pager shows the last instead)."""
    asked = _asked(request)
    found = report_parts(
        report=report,
        parts={
            "collection": "$.collection",
            "generated_at": "$.generated_at",
            "totals": "$.sections[*].rows.size()",
            # Every section's first page, one after the other.
            "first": f"$.sections[*].rows[0 to {PAIRS_PER_PAGE - 1}]",
            **{key: f"$.sections[*].{key}" for key in SECTION_KEYS},
            **{f"page-{index}": (f"$.sections[{index}].rows", _positions(n)) for index, n in asked.items()},
        },
    )
    sections: list[dict[str, Any]] = [
        dict(zip(SECTION_KEYS, values, strict=True))
        for values in zip(*(found[key] for key in SECTION_KEYS), strict=True)
    ]
    missing: dict[int, range] = {}
    first_start = 0
    for index, (section, total) in enumerate(zip(sections, found["totals"], strict=True)):
        anchor = f"section-{index}"
        pager = page_of(
            request, range(total), param=section_page_param(index), anchor=anchor, per_page=PAIRS_PER_PAGE
        )
        first_rows = found["first"][first_start : first_start + min(total, PAIRS_PER_PAGE)]
        first_start += len(first_rows)
        if pager.page.number == 1:
            section["rows"] = first_rows
        elif asked.get(index) == pager.page.number:
            section["rows"] = found[f"page-{index}"]
        else:
            missing[index] = positions_of(pager)
        section.update(total=total, anchor=anchor, pager=pager)
    if missing:
        again = report_parts(
            report=report,
            parts={str(index): (f"$.sections[{index}].rows", rows) for index, rows in missing.items()},
        )
        for index in missing:
            sections[index]["rows"] = again[str(index)]
    return {
        "collection": next(iter(found["collection"]), ""),
        "generated_at": next(iter(found["generated_at"]), ""),
        "sections": sections,
    }
