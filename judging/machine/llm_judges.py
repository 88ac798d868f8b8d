"""LLM judges: each a versioned prompt template (judging/machine/prompts/<name>_v1.txt) and a strict parser.

A parser either returns a label or raises UnparsableAnswer: an answer the parser does not understand is
recorded as a failure by the job, never turned into a guessed label.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from annotation.models import SupportLabel

PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"

RELEVANCE = "relevance_v1"
NUGGETS = "nuggets_v1"
NUGGETS_FOLLOWUP = "nuggets_followup_v1"
NTR = "ntr_v1"
SUPPORT = "support_v1"


class UnparsableAnswer(ValueError):
    """The model's answer does not say a label in the form the prompt asked for."""


@dataclass(frozen=True)
class PromptTemplate:
    version: str
    text: str

    def render(self, **values: str) -> str:
        # substitute (not safe_substitute): a template naming a value the judge does not pass is a bug.
        return string.Template(self.text).substitute(values)


@cache
def prompt(version: str) -> PromptTemplate:
    path = PROMPTS_DIR / f"{version}.txt"
    return PromptTemplate(version=version, text=path.read_text(encoding="utf-8"))


def _clean_line(line: str) -> str:
    """Drop markdown emphasis and surrounding whitespace, so '**Grade: 3**' reads as 'grade: 3'."""
    return line.strip().strip("*_`").strip().lower()


# --- Relevance (iKAT 0-4) --------------------------------------------------------------------------


def relevance_render(
    *,
    utterance: str,
    resolved_utterance: str,
    context: list[tuple[str, str]],
    ptkb: list[str],
    passage: str,
) -> str:
    """The relevance prompt; `context` holds the earlier (utterance, response) pairs of the conversation."""
    context_text = (
        "\n".join(f"User: {u}\nAssistant: {r}" if r else f"User: {u}" for u, r in context)
        or "(this is the first turn)"
    )
    ptkb_text = "\n".join(f"{i}. {s}" for i, s in enumerate(ptkb, start=1)) or "(none)"
    return prompt(RELEVANCE).render(
        ptkb=ptkb_text,
        context=context_text,
        utterance=utterance,
        resolved_utterance=resolved_utterance or utterance,
        passage=passage,
    )


_GRADE_LINE = re.compile(r"^(?:(?:final\s+)?(?:grade|score|relevance)\s*[:=]?\s*)?([0-4])\s*\.?$")


def relevance_parse(answer: str) -> int:
    """The grade of an answer that says one grade, on a line of its own ('Grade: 3' or '3')."""
    grades = {int(m.group(1)) for line in answer.splitlines() if (m := _GRADE_LINE.match(_clean_line(line)))}
    if len(grades) != 1:
        raise UnparsableAnswer(
            "no grade 0-4 on a line of its own" if not grades else f"several grades: {sorted(grades)}"
        )
    return grades.pop()


# --- Nugget extraction (spans) ---------------------------------------------------------------------

# A list marker is followed by whitespace: "1. span" loses "1. ", but "1.15 m tall" keeps its number.
_LIST_MARKER = re.compile(r"^(?:[-*•‣◦–—+]|\d{1,3}[.)]|\(\d{1,3}\)|\[\d{1,3}\]|#{1,6})\s+")
_NO_NUGGET = re.compile(r"^no\s+nuggets?\s*\.?$")
_QUOTES = {'"': '"', "'": "'", "“": "”", "‘": "’", "«": "»"}


def nuggets_render(*, query: str, text: str) -> str:
    return prompt(NUGGETS).render(query=query, text=text)


def nuggets_followup_render(*, query: str, text: str, missing: list[str]) -> str:
    return prompt(NUGGETS_FOLLOWUP).render(query=query, text=text, missing="\n".join(missing))


def _span_line(raw: str) -> str:
    line = raw.strip()
    while (stripped := _LIST_MARKER.sub("", line, count=1)) != line:
        line = stripped.strip()
    if len(line) >= 2 and _QUOTES.get(line[0]) == line[-1]:
        line = line[1:-1].strip()
    return line


def nugget_lines_parse(answer: str) -> list[str]:
    """The spans of an answer, one per line; 'No nugget' gives none. List markers and quotes are removed."""
    spans: list[str] = []
    for raw in answer.splitlines():
        line = _span_line(raw)
        if not line or _NO_NUGGET.match(_clean_line(line)):
            continue
        if line not in spans:
            spans.append(line)
    return spans


_NOT_FOUND = re.compile(r"^(?:not\s+found|no\s+nuggets?)\s*\.?$")


def followup_lines_parse(answer: str) -> list[str | None]:
    """The follow-up's lines in order, one per missing nugget: a span, or None for 'Not found'."""
    lines: list[str | None] = []
    for raw in answer.splitlines():
        line = _span_line(raw)
        if line:
            lines.append(None if _NOT_FOUND.match(_clean_line(line)) else line)
    return lines


def span_locate(text: str, span: str) -> tuple[int, int] | None:
    """Where `span` is in `text`: exactly, else ignoring case, else also ignoring differences of whitespace."""
    if not span.strip():
        return None
    start = text.find(span)
    if start >= 0:
        return start, start + len(span)
    # re.IGNORECASE matches on the original string, so offsets stay right even where lower() changes lengths.
    match = re.search(re.escape(span), text, re.IGNORECASE)
    if match is None:
        pattern = r"\s+".join(re.escape(token) for token in span.split())
        match = re.search(pattern, text, re.IGNORECASE)
    return (match.start(), match.end()) if match else None


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    text: str


def spans_match(text: str, candidates: list[str]) -> tuple[list[Span], list[str]]:
    """Locate candidate spans in `text`: the spans found (their text as it is in `text`) and those not found."""
    found: list[Span] = []
    missing: list[str] = []
    for candidate in candidates:
        where = span_locate(text, candidate)
        if where is None:
            missing.append(candidate)
        elif all((s.start, s.end) != where for s in found):
            found.append(Span(start=where[0], end=where[1], text=text[where[0] : where[1]]))
    return found, missing


# --- Nugget to response (yes / no) -----------------------------------------------------------------

_YES_NO = re.compile(r"^(yes|no)(?:$|[\s.,:;!)-])")


def ntr_render(*, query: str, nugget: str, response: str) -> str:
    return prompt(NTR).render(query=query, nugget=nugget, response=response)


def yes_no_parse(answer: str) -> bool:
    """True for 'Yes' ('Yes.', 'yes', '**YES**', 'Yes, it does'), False for 'No'; anything else is unparsable."""
    text = _clean_line(answer.strip().splitlines()[0] if answer.strip() else "").strip("\"'")
    match = _YES_NO.match(text)
    if match is None:
        raise UnparsableAnswer("the answer does not start with yes or no")
    return match.group(1) == "yes"


# --- Support (TREC RAG) ----------------------------------------------------------------------------

_SUPPORT_LINE = re.compile(
    r"^(?:(?:final\s+)?(?:answer|label|judgment|judgement)\s*:\s*)?(full|partial|no)\s+support(?:ed)?\s*\.?$"
)
_SUPPORT_LABELS = {"full": SupportLabel.FULL, "partial": SupportLabel.PARTIAL, "no": SupportLabel.NONE}


def support_render(*, sentence: str, passage: str) -> str:
    return prompt(SUPPORT).render(sentence=sentence, passage=passage)


def support_parse(answer: str) -> str:
    """'FS', 'PS' or 'NS' for an answer naming one of Full / Partial / No Support on a line of its own."""
    labels = {
        _SUPPORT_LABELS[m.group(1)]
        for line in answer.splitlines()
        if (m := _SUPPORT_LINE.match(_clean_line(line)))
    }
    if len(labels) != 1:
        raise UnparsableAnswer(
            "no Full / Partial / No Support line" if not labels else "several support labels"
        )
    return str(labels.pop())
