"""Readers for the file formats the IR community exchanges, with file:line on every problem.

Parsers here only read and validate; they never touch the database. Each returns plain records and
raises `ImportFailed` listing every problem it found (up to a cap), so an import is all-or-nothing.
"""

from __future__ import annotations

import bisect
import heapq
import json
import json.decoder
import json.scanner
import math
import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from django.conf import settings

MAX_PROBLEMS = 50
# Error messages quote at most this much of a bad value: one bad line must not make a message of megabytes.
EXCERPT = 60
# Integers beyond a 64-bit column fail at insert time, so JSON files may not hold them; ranks, offsets and indices stored in integer columns stop at MAX_INT.
MAX_JSON_INT = 2**63 - 1
MAX_INT = 2**31 - 1
DEFAULT_IMPORT_MAX_BYTES = 2 * 1024**3


class ImportFailed(Exception):
    """An input file was rejected; `problems` are `path:line: message` strings, `more` the count of
    further problems found but not kept (a file with a million bad lines is answered with the first
    MAX_PROBLEMS and how many more)."""

    def __init__(self, problems: list[str], *, more: int = 0):
        self.problems = problems[:MAX_PROBLEMS]
        self.more = more + len(problems) - len(self.problems)
        rest = f"\n... and {self.more} more" if self.more else ""
        super().__init__("\n".join(self.problems) + rest)


@dataclass
class Problems:
    """Collects problems of one file and raises them together, in line order.

    Every problem is counted; the MAX_PROBLEMS of the lowest lines are kept, whatever order the checks
    found them in (the file's syntax first, then its ids against the database), so that one pass says
    what is wrong first in the file and how many problems it has. Checks go on to the end of the file.
    """

    path: str
    more: int = 0
    # (-line, -order, message): a heap whose top is the kept problem latest in the file.
    _kept: list[tuple[int, int, str]] = field(default_factory=list, repr=False)

    def add(self, line: int | None, message: str) -> None:
        where = f"{self.path}:{line}" if line else self.path
        entry = (-(line or 0), -(self.more + len(self._kept)), f"{where}: {message}")
        if len(self._kept) < MAX_PROBLEMS:
            heapq.heappush(self._kept, entry)
        else:
            # The new problem is kept only if it comes earlier in the file than the latest kept one.
            heapq.heappushpop(self._kept, entry)
            self.more += 1

    @property
    def items(self) -> list[str]:
        """The kept problems in line order (problems of the whole file first, then by line)."""
        return [message for _at, _order, message in sorted(self._kept, reverse=True)]

    def raise_if_any(self) -> None:
        if self._kept:
            raise ImportFailed(self.items, more=self.more)

    def bad_id(self, line: int | None, value: str, what: str, max_length: int) -> bool:
        """Record why `value` cannot be a `what` and say True; False when it can (see `id_problem`)."""
        problem = id_problem(value, what, max_length)
        if problem:
            self.add(line, problem)
        return problem is not None


def excerpt(value: object, limit: int = EXCERPT) -> str:
    """`value` quoted for an error message, cut to `limit` characters with its full length said."""
    text = value if isinstance(value, str) else str(value)
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text)} characters)"


def megabytes(size: int) -> str:
    return f"{size / 1024**2:.0f} MB" if size < 1024**3 else f"{size / 1024**3:.1f} GB"


def import_max_bytes() -> int:
    return int(getattr(settings, "IMPORT_MAX_BYTES", DEFAULT_IMPORT_MAX_BYTES))


def _open_checked(path: str | Path) -> tuple[IO[bytes], int]:
    """The file opened for reading bytes, and the import limit; refused when it cannot be imported."""
    name = str(path)
    limit = import_max_bytes()
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        raise ImportFailed([f"{name}: no such file"]) from None
    except IsADirectoryError:
        raise ImportFailed([f"{name}: is a directory, not a file"]) from None
    except PermissionError:
        raise ImportFailed([f"{name}: permission denied"]) from None
    info = os.fstat(handle.fileno())
    problem = ""
    if not (stat.S_ISREG(info.st_mode) or stat.S_ISFIFO(info.st_mode)):
        problem = f"{name}: not a regular file"
    elif info.st_size > limit:
        problem = (
            f"{name}: the file has {megabytes(info.st_size)}, more than the import limit of "
            f"{megabytes(limit)} (setting IMPORT_MAX_BYTES)"
        )
    if problem:
        handle.close()
        raise ImportFailed([problem])
    return handle, limit


# A line of a line-based file longer than this is no line of any format read here: refused rather than read
# whole, so that one line without an end cannot take the file's size in memory.
MAX_LINE_BYTES = 16 * 1024**2


# Bytes read at a time by `read_lines`: lines are split and checked a block at a time, not one by one.
_BLOCK = 256 * 1024


def read_lines(path: str | Path, *, json_lines: bool = False) -> Iterator[tuple[int, str]]:
    """The file's lines (numbered from 1, without their ends) as `read_text` would split them, read a block
    at a time, so that memory stays the same whatever the file's size; the same refusals, raised when
    the reading reaches them (the caller's transaction undoes what it wrote meanwhile).

    With `json_lines`, lines end at '\\n' only, as `iter_jsonl` splits them."""
    name = str(path)
    handle, limit = _open_checked(path)
    number, offset, blank = 0, 0, True
    pending = b""
    with handle:
        while True:
            data = handle.read(_BLOCK)
            if offset + len(pending) + len(data) > limit:
                raise ImportFailed(
                    [f"{name}: more than the import limit of {megabytes(limit)} (setting IMPORT_MAX_BYTES)"]
                )
            if data:
                data = pending + data if pending else data
                end = data.rfind(b"\n") + 1
                if len(data) - end > MAX_LINE_BYTES:
                    line = number + data.count(b"\n", 0, end) + 1
                    raise ImportFailed([f"{name}:{line}: a line longer than {megabytes(MAX_LINE_BYTES)}"])
                block, pending = data[:end], data[end:]
                if not block:
                    continue
            elif pending:  # the last line, without its end
                block, pending = pending, b""
            else:
                break
            try:
                text = block.decode("utf-8-sig" if offset == 0 else "utf-8")
            except UnicodeDecodeError as exc:
                line = number + block.count(b"\n", 0, exc.start) + 1
                raise ImportFailed(
                    [
                        f"{name}:{line}: not UTF-8 (byte 0x{block[exc.start]:02x} at offset {offset + exc.start})"
                    ]
                ) from None
            nul = text.find("\x00")
            if nul != -1:
                line = number + text.count("\n", 0, nul) + 1
                raise ImportFailed(
                    [f"{name}:{line}: a NUL character (byte 0x00); text fields cannot hold it"]
                )
            offset += len(block)
            blank = blank and not text.strip()
            if json_lines:
                lines = text.split("\n")
                if text.endswith("\n"):
                    lines.pop()  # the empty piece after the block's last line end
            else:
                # str.splitlines, as read_text splits: a line may hold other line ends than '\n'.
                lines = text.splitlines()
            for line_text in lines:
                number += 1
                yield number, line_text
    if blank:
        raise ImportFailed([f"{name}: the file is empty"])


def first_line(path: str | Path) -> str:
    """The file's first line that is not blank, without its leading whitespace (at most MAX_LINE_BYTES of
    it), for telling formats apart without reading the file; the file's own problems are left to the
    reading that follows, and an undecodable start reads as empty."""
    handle, _limit = _open_checked(path)
    encoding = "utf-8-sig"
    with handle:
        while raw := handle.readline(MAX_LINE_BYTES):
            text = raw.decode(encoding, errors="replace").strip()
            if text:
                return text
            encoding = "utf-8"
    return ""


def read_text(path: str | Path) -> str:
    """The file's text as UTF-8; a missing, empty, oversized or non-UTF-8 file is rejected with its line.

    Reads stop at IMPORT_MAX_BYTES, so a device or an endless pipe ends in an error instead of exhausting
    memory, and a NUL character is refused here for every format: PostgreSQL cannot store it in text.
    """
    name = str(path)
    handle, limit = _open_checked(path)
    with handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ImportFailed(
            [f"{name}: more than the import limit of {megabytes(limit)} (setting IMPORT_MAX_BYTES)"]
        )
    if not data.strip():
        raise ImportFailed([f"{name}: the file is empty"])
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ImportFailed(
            [f"{name}:{line}: not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})"]
        ) from None
    nul = text.find("\x00")
    if nul != -1:
        line = text.count("\n", 0, nul) + 1
        raise ImportFailed([f"{name}:{line}: a NUL character (byte 0x00); text fields cannot hold it"])
    return text


# --- Names and ids ---------------------------------------------------------------------------------

# The columns the ids are stored in; PostgreSQL refuses longer values.
MAX_TOPIC_NUMBER = 64
MAX_TURN_ID = 64
MAX_STATEMENT_ID = 32
MAX_PASSAGE_ID = 255
MAX_RUN_NAME = 200
MAX_JUDGE_NAME = 200
MAX_NUGGET_KEY = 32
MAX_NUGGET_RELEVANCE = 8


# Control characters (Unicode Cc), surrogates, and the line and paragraph separators.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029]")


# What `id_problem` refuses inside a whitespace-separated line, where tabs and other separators end an id.
_HOSTILE = re.compile("[/\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f\ud800-\udfff]")


def plain_line(text: str) -> bool:
    """True when no id of these whitespace-separated lines holds '/' or a control character (a fast test
    for the common case; lengths and '.' or '..' ids still need checking)."""
    return _HOSTILE.search(text) is None


def id_problem(value: str, what: str, max_length: int) -> str | None:
    """Why `value` cannot be a `what` (a turn id, passage id, run name, ...), or None when it can.

    Ids and names end up in URL paths, page titles and file names: they must be non-empty, at most
    `max_length` characters (the database column, which refuses more), free
    of '/' (a path separator: the page of a turn id with '/' cannot be addressed), of control characters,
    and not '.' or '..' (which browsers resolve away in a URL).
    """
    if not value:
        return f"empty {what}"
    if len(value) > max_length:
        return f"{what} {excerpt(value, 20)} is longer than {max_length} characters"
    if "/" in value:
        return f"{what} {excerpt(value)} contains '/'"
    if value in {".", ".."}:
        return f"{what} {value!r} is not a name"
    bad = _CONTROL.search(value)
    if bad is not None:
        return f"{what} {excerpt(value)} contains the control character U+{ord(bad.group()):04X}"
    return None


def check_name(value: str, what: str, max_length: int) -> str:
    """`value` if it can be a `what`; ImportFailed (no file, no line) otherwise, e.g. for --name."""
    problem = id_problem(value, what, max_length)
    if problem:
        raise ImportFailed([problem])
    return value


# --- JSON whose objects remember their line --------------------------------------------------------


class LineDict(dict):
    """A JSON object that knows the line it starts on."""

    line: int = 0


class _BadNumber(ValueError):
    """A number a JSON file may not hold: NaN, an infinity, or an integer beyond the database's."""

    def __init__(self, token: str, reason: str):
        super().__init__(reason)
        self.token = token
        self.reason = reason


def _constant(token: str) -> float:
    raise _BadNumber(token, f"{token} is not a number")


def _float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise _BadNumber(token, f"number {excerpt(token, 20)} is out of range")
    return value


def _int(token: str) -> int:
    if len(token) > 20 or abs(value := int(token)) > MAX_JSON_INT:
        raise _BadNumber(token, f"integer {excerpt(token, 20)} is out of range (at most {MAX_JSON_INT})")
    return value


_NUMBER_HOOKS: dict[str, Any] = {"parse_constant": _constant, "parse_float": _float, "parse_int": _int}
# JSON escapes a string cannot be stored with: NUL (PostgreSQL text refuses it) and lone surrogates
# (not encodable as UTF-8 by either database driver). An escaped backslash before them does not count.
_ESCAPE = re.compile(r"\\u(0000|[dD][89a-fA-F][0-9a-fA-F]{2})")
_LOW_SURROGATE = re.compile(r"\\u[dD][c-fC-F][0-9a-fA-F]{2}")


def _bad_escape(text: str) -> tuple[int, str] | None:
    """(offset, reason) of the first escape in a JSON text that no database can store, or None."""
    paired_until = 0
    for found in _ESCAPE.finditer(text):
        at = before = found.start()
        while before > 0 and text[before - 1] == "\\":
            before -= 1
        if (at - before) % 2 or at < paired_until:
            continue  # an escaped backslash followed by 'u...', or the low half of a pair just seen
        code = found.group(1)
        if code == "0000":
            return at, "a NUL character (\\u0000); text fields cannot hold it"
        if code[1].lower() in "89ab" and _LOW_SURROGATE.match(text, found.end()):
            paired_until = found.end() + 6  # a high surrogate with its low half: one character beyond the BMP
            continue
        return at, f"a lone surrogate (\\u{code}), which is not a character"
    return None


def _where(text: str, token: str) -> int:
    """The line of the first place `token` stands as a JSON value (after ':', ',' or '[')."""
    found = re.search(r"[:,\[]\s*" + re.escape(token[:200]), text)
    return text.count("\n", 0, found.end()) + 1 if found else 1


class _LineDecoder(json.JSONDecoder):
    def __init__(self, line_of: Any):
        super().__init__(**_NUMBER_HOOKS)

        def parse_object(s_and_end, strict, scan_once, object_hook, object_pairs_hook, memo=None):
            s, end = s_and_end
            # The stdlib's own object parser and pure-Python scanner: public in the module, absent from its stubs.
            pairs, new_end = json.decoder.JSONObject(  # type: ignore[attr-defined]
                s_and_end, strict, scan_once, None, list, memo
            )
            obj = LineDict(pairs)
            obj.line = line_of(end - 1)
            return obj, new_end

        self.parse_object = parse_object
        self.scan_once = json.scanner.py_make_scanner(self)  # type: ignore[attr-defined]


def load_json(text: str, path: str) -> Any:
    """Parse JSON; every object is a `LineDict` carrying its line, syntax errors name their line."""
    starts = [0]
    pos = text.find("\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = text.find("\n", pos + 1)

    def line_of(offset: int) -> int:
        return bisect.bisect_right(starts, offset)

    escape = _bad_escape(text) if "\\u" in text else None
    if escape:
        raise ImportFailed([f"{path}:{text.count(chr(10), 0, escape[0]) + 1}: {escape[1]}"])
    try:
        return _LineDecoder(line_of).decode(text)
    except json.JSONDecodeError as exc:
        raise ImportFailed([f"{path}:{exc.lineno}: invalid JSON: {exc.msg} (column {exc.colno})"]) from None
    except _BadNumber as exc:
        raise ImportFailed([f"{path}:{_where(text, exc.token)}: {exc.reason}"]) from None
    except RecursionError:
        raise ImportFailed([f"{path}: JSON nested too deeply to read"]) from None


def iter_jsonl(text: str, path: str, problems: Problems) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; bad lines are recorded as problems.

    Lines end at '\\n' only: str.splitlines would also split at U+2028 and other separators that web
    text holds inside JSON strings, and would then count lines differently from every editor.
    """
    return _jsonl_objects(enumerate(text.split("\n"), start=1), problems)


def read_jsonl(path: str | Path, problems: Problems) -> Iterator[tuple[int, dict[str, Any]]]:
    """`iter_jsonl` of the file, read a line at a time (see `read_lines`)."""
    return _jsonl_objects(read_lines(path, json_lines=True), problems)


def _jsonl_objects(
    lines: Iterable[tuple[int, str]], problems: Problems
) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in lines:
        if not line.strip():
            continue
        escape = _bad_escape(line) if "\\u" in line else None
        if escape:
            problems.add(number, escape[1])
            continue
        try:
            obj = json.loads(line, **_NUMBER_HOOKS)
        except json.JSONDecodeError as exc:
            problems.add(number, f"invalid JSON: {exc.msg} (column {exc.colno})")
            continue
        except _BadNumber as exc:
            problems.add(number, exc.reason)
            continue
        except RecursionError:
            problems.add(number, "JSON nested too deeply to read")
            continue
        if not isinstance(obj, dict):
            problems.add(number, f"expected a JSON object, got {type(obj).__name__}")
            continue
        yield number, obj


def json_line(obj: object, default: int = 0) -> int:
    """The line an object read by `load_json` starts on (a `LineDict`); `default` for any other value."""
    return getattr(obj, "line", default)


def as_text(value: object) -> str:
    """A JSON value as the text stored for it: null is empty, a number its digits."""
    return "" if value is None else str(value)
