"""The LLM judges of TREC RAG nugget evaluation: nugget creation, vital/okay importance and assignment.

Each is a versioned prompt (judging/machine/prompts/<name>_v1.txt) and a strict parser, like the other LLM
judges: a parser returns what the answer says or raises UnparsableAnswer, never a guessed label. Importance
and assignment label a window of numbered nuggets in one call, so their parsers need one label for every
number asked about, and the same label wherever a number is repeated.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from annotation.models import MAX_NUGGET_TEXT, NuggetImportance, NuggetSupport
from core.wording import plural
from judging.machine.llm_judges import UnparsableAnswer, prompt

NUGGETS_CREATE = "nuggets_create_v1"
IMPORTANCE = "importance_v1"
ASSIGNMENT = "assignment_v1"

# Said after an unreadable answer; the attempt number keeps every retry's prompt (and cache key) its own.
RETRY_NOTE = (
    "\n\nYour previous answer could not be read ({reason}). Answer again (attempt {attempt}), in exactly the "
    "form asked for above."
)


def _one_line(text: str) -> str:
    """Text on one line: passages and nuggets are listed one per line in the prompts."""
    return " ".join(text.split())


def _numbered(texts: Sequence[str]) -> str:
    return "\n".join(f"{i}. {_one_line(t)}" for i, t in enumerate(texts, start=1))


def retry_render(prompt_text: str, reason: str, attempt: int) -> str:
    """The prompt asked again after an unreadable answer; it differs, so it has its own cache key."""
    return prompt_text + RETRY_NOTE.format(reason=reason, attempt=attempt)


# --- Creation ----------------------------------------------------------------------------------------


def nuggets_create_render(
    *, query: str, nuggets: Sequence[str], passages: Sequence[str], max_nuggets: int
) -> str:
    passages_text = "\n".join(f"[{i}] {_one_line(p)}" for i, p in enumerate(passages, start=1))
    return prompt(NUGGETS_CREATE).render(
        query=query,
        nuggets=_numbered(nuggets) or "(empty)",
        passages=passages_text,
        max_nuggets=str(max_nuggets),
    )


# "1. text", "1) text", "- text", "* text", "[1] text": the marker goes, the nugget stays.
_ITEM = re.compile(r"^\s*(?:\d{1,3}\s*[.):]|[-*•]|\[\d{1,3}\])\s+(.+?)\s*$")
_NONE = re.compile(r"^\W*no\s+nuggets?\W*$", re.IGNORECASE)
_FENCE = re.compile(r"^```[a-z]*\s*|\s*```$")


def _json_list(answer: str) -> list[str] | None:
    """The strings of an answer that is a JSON list of strings (nuggetizer's own form), else None."""
    text = _FENCE.sub("", answer.strip()).strip()
    if not text.startswith("["):
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return None
    return value


def nugget_list_parse(answer: str, *, max_nuggets: int) -> list[str]:
    """The nuggets of an answer, in its order: list items (numbered or bulleted) or a JSON list of strings.

    Repeats (ignoring case and spacing) are dropped and the list is cut at `max_nuggets`; "No nuggets" is
    an empty list. An answer with neither list items nor "No nuggets" is unparsable.
    """
    items = _json_list(answer)
    if items is None:
        lines = [line for line in answer.splitlines() if line.strip()]
        if len(lines) == 1 and _NONE.match(lines[0].strip("*_` ")):
            return []
        items = [m.group(1).strip("*_` \"'") for line in lines if (m := _ITEM.match(line))]
        if not items:
            raise UnparsableAnswer("no numbered list of nuggets and no 'No nuggets'")
    kept: list[str] = []
    seen: set[str] = set()
    for item in items:
        text = _one_line(item)
        if len(text) > MAX_NUGGET_TEXT:
            raise UnparsableAnswer(f"a nugget of {len(text):,} characters (at most {MAX_NUGGET_TEXT:,})")
        folded = text.casefold()
        if text and folded not in seen:
            seen.add(folded)
            kept.append(text)
    return kept[:max_nuggets]


# --- Labels of a window of numbered nuggets ----------------------------------------------------------

_LABEL_LINE = re.compile(r"^\s*(?:(?:nugget\s*)?\[?(\d{1,3})\]?\s*[.):=-]?\s*)?(.+?)\s*$", re.IGNORECASE)
# What may follow a label on its line: a reason in brackets or after a dash, comma or semicolon.
_AFTER_LABEL = re.compile(r"\s[-–(]|[,;(]")


def _labels_parse(answer: str, *, count: int, labels: dict[str, str], what: str) -> list[str]:
    """One label for each of `count` numbered nuggets: from "n: label" lines, or (when no line is
    numbered) from exactly `count` label lines, or from a JSON list of `count` labels."""
    listed = _json_list(answer)
    if listed is not None:
        found = [labels.get(_label_key(v)) for v in listed]
        if len(found) != count or None in found:
            raise UnparsableAnswer(f"a list of {len(listed)} values, not {plural(count, what + ' label')}")
        return [label for label in found if label is not None]
    numbered: dict[int, set[str]] = {}
    plain: list[str] = []
    for line in answer.splitlines():
        match = _LABEL_LINE.match(line.strip("*_`"))
        if match is None:
            continue
        label = labels.get(_label_key(_AFTER_LABEL.split(match.group(2), maxsplit=1)[0]))
        if label is None:
            continue
        if match.group(1) is None:
            plain.append(label)
        else:
            numbered.setdefault(int(match.group(1)), set()).add(label)
    if not numbered and len(plain) == count:
        return plain
    missing = [n for n in range(1, count + 1) if n not in numbered]
    if missing:
        raise UnparsableAnswer(f"no {what} label for nugget {', '.join(map(str, missing[:5]))}")
    torn = [n for n in range(1, count + 1) if len(numbered[n]) > 1]
    if torn:
        raise UnparsableAnswer(f"several {what} labels for nugget {torn[0]}")
    return [numbered[n].pop() for n in range(1, count + 1)]


def _label_key(text: str) -> str:
    """'Partial support.', '**partial_support**', 'Partially supported' all read as 'partial support'."""
    words = re.sub(r"[^a-z]+", " ", text.lower()).split()
    return " ".join(words)


# --- Importance --------------------------------------------------------------------------------------

_IMPORTANCE_WORDS = {"vital": NuggetImportance.VITAL.value, "okay": NuggetImportance.OKAY.value}
_IMPORTANCE_WORDS["ok"] = NuggetImportance.OKAY.value


def importance_render(*, query: str, nuggets: Sequence[str]) -> str:
    return prompt(IMPORTANCE).render(query=query, nuggets=_numbered(nuggets))


def importance_parse(answer: str, *, count: int) -> list[str]:
    """vital or okay for each of the `count` nuggets asked about, in their order."""
    return _labels_parse(answer, count=count, labels=_IMPORTANCE_WORDS, what="vital/okay")


# --- Assignment --------------------------------------------------------------------------------------

_SUPPORT_WORDS = {
    **dict.fromkeys(["support", "supported", "full support", "fully supported"], NuggetSupport.SUPPORT.value),
    **dict.fromkeys(
        ["partial support", "partially supported", "partial", "partially support"],
        NuggetSupport.PARTIAL.value,
    ),
    **dict.fromkeys(
        ["not support", "not supported", "no support", "unsupported", "does not support"],
        NuggetSupport.NONE.value,
    ),
}


def answer_is_empty(answer: str) -> bool:
    """An answer with no text supports no nugget: nuggetizer labels every nugget not_support without
    asking its LLM, and so do the assignment jobs (no call, no cost, no guess)."""
    return not answer.strip()


def assignment_render(*, query: str, answer: str, nuggets: Sequence[str]) -> str:
    return prompt(ASSIGNMENT).render(query=query, answer=answer.strip(), nuggets=_numbered(nuggets))


def assignment_parse(answer: str, *, count: int) -> list[str]:
    """support, partial_support or not_support for each of the `count` nuggets asked about, in order."""
    return _labels_parse(answer, count=count, labels=_SUPPORT_WORDS, what="assignment")
