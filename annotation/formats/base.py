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
