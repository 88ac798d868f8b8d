"""What the fuzz tests post: the forms a page offers (read from its HTML), and hypothesis strategies for the
values people and scripts should never send but can.

The nasty values are the ones that broke pages before: NUL (PostgreSQL refuses it), numbers no column
holds (`inf`, `1e400`, thirty nines), digits that are not ASCII (`²` passes `str.isdigit`), compatibility
spellings (`ａlice`), path pieces, reserved judge names, a field far longer than any column, and JSON
nested deeper than the interpreter's stack.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from html.parser import HTMLParser

from hypothesis import strategies as st

NASTY = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "inf",
    "-inf",
    "nan",
    "1e400",
    "1e30",
    "-1",
    "0",
    "9" * 30,
    "²",
    "٣",
    "ａlice",
    "..",
    "a/b",
    "\t",
    "line\nbreak",
    "assessor:someone",
    "crowd-majority",
    "<b>x</b>",
    "'; --",
    "%s%n",
    "x" * 5_000,
    "é" * 70_000,
]

text_values = st.one_of(st.sampled_from(NASTY), st.text(max_size=40))


def json_values(depth: int = 4) -> st.SearchStrategy[object]:
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=False, allow_infinity=False),
        text_values,
    )
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
        ),
        max_leaves=8,
    )


# Bodies no JSON reader of ours should choke on: nesting far past the stack, numbers no float holds,
# NUL escaped and raw, lone surrogates, bytes that are not UTF-8, and plain not-JSON.
RAW_JSON_BODIES = [
    b"[" * 100_000 + b"]" * 100_000,
    b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    b'{"text": "a\\u0000b", "start": 0, "end": 1}',
    b'{"start": 1e400, "end": Infinity, "grade": NaN}',
    b'{"text": "\\ud800"}',
    b"\xff\xfe{}",
    b"not json",
    b"[]",
    b"null",
    b'"a string"',
]


def json_bodies(fields: list[str]) -> st.SearchStrategy[bytes]:
    """A raw nasty body, or an object with the endpoint's own field names and arbitrary values."""
    objects = st.fixed_dictionaries({}, optional={name: json_values() for name in fields}).map(
        lambda data: json.dumps(data).encode()
    )
    return st.one_of(st.sampled_from(RAW_JSON_BODIES), objects)


@dataclass
class Form:
    """A form of a page, as its HTML offers it: where it posts and the values each field lists."""

    page: str
    action: str
    multipart: bool
    fields: dict[str, list[str]] = field(default_factory=dict)  # name -> the values offered (options)
    kinds: dict[str, str] = field(default_factory=dict)  # name -> input type (text, number, ...)
    files: list[str] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, tuple[str, ...]]:
        return (self.action, tuple(sorted(self.fields)) + tuple(self.files))


class _FormParser(HTMLParser):
    def __init__(self, page: str) -> None:
        super().__init__()
        self.page = page
        self.forms: list[Form] = []
        self.query_names: set[str] = set()  # what the page's GET forms put in its address
        self._form: Form | None = None
        self._select: str | None = None
        self._in_get_form = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            if a.get("method", "get").lower() == "post":
                multipart = a.get("enctype") == "multipart/form-data"
                self._form = Form(page=self.page, action=a.get("action") or self.page, multipart=multipart)
                self.forms.append(self._form)
            else:
                self._in_get_form = True
            return
        if self._in_get_form and a.get("name") and tag in ("input", "select", "textarea", "button"):
            self.query_names.add(a["name"])
        form, name = self._form, a.get("name")
        if form is None:
            return
        if tag == "option" and self._select is not None:
            form.fields[self._select].append(a.get("value", ""))
        if not name or name == "csrfmiddlewaretoken":
            return
        if tag == "input" and a.get("type") == "file":
            form.files.append(name)
        elif tag in ("input", "textarea", "button", "select"):
            offered = form.fields.setdefault(name, [])
            form.kinds.setdefault(name, a.get("type", tag))
            if "value" in a:
                offered.append(a["value"])
            if tag == "select":
                self._select = name

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._form = None
            self._in_get_form = False
        elif tag == "select":
            self._select = None


def forms_of(page: str, html: str) -> list[Form]:
    parser = _FormParser(page)
    parser.feed(html)
    return parser.forms


def query_names_of(page: str, html: str) -> set[str]:
    """The names of the fields of the page's GET forms: the query parameters it reads."""
    parser = _FormParser(page)
    parser.feed(html)
    return parser.query_names


# What a person would type into a field of each kind, so that a post gets past the fields left alone.
PLAUSIBLE = {
    "number": "3",
    "email": "fuzz@example.org",
    "url": "https://example.org/done",
    "password": "fuzz-Password-4711",
    "checkbox": "on",
}


def plausible(offered: list[str], kind: str) -> st.SearchStrategy[str]:
    real = [value for value in offered if value]
    return st.sampled_from(real) if real else st.just(PLAUSIBLE.get(kind, "fuzz-a"))


def field_values(offered: list[str], kind: str) -> st.SearchStrategy[object]:
    """Absent, one value (offered by the page, or nasty), or several."""
    one = st.one_of(plausible(offered, kind), text_values)
    return st.one_of(st.none(), one, st.lists(one, min_size=2, max_size=3))


def form_data(form: Form) -> st.SearchStrategy[dict[str, object]]:
    """Every field as a person would fill it, then one to three fields fuzzed: so that the nasty value
    reaches the code behind the form rather than the first check of an otherwise empty post."""
    names = sorted(form.fields)
    base = st.fixed_dictionaries({n: plausible(form.fields[n], form.kinds.get(n, "text")) for n in names})
    if not names:
        return base

    def fuzz(fields: dict[str, object], chosen: list[str]) -> st.SearchStrategy[dict[str, object]]:
        changed = {n: field_values(form.fields[n], form.kinds.get(n, "text")) for n in chosen}
        return st.fixed_dictionaries(changed).map(lambda new: {**fields, **new})

    chosen = st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True)
    return st.tuples(base, chosen).flatmap(lambda pair: fuzz(*pair))


file_bodies = st.one_of(
    st.binary(max_size=300),
    st.lists(st.sampled_from(NASTY[:24]), max_size=6).map(lambda lines: "\n".join(lines).encode()),
    st.sampled_from([b"", b"\x00" * 10, b"q1 0 d1 NONE\n", b'{"a": 1e400}', RAW_JSON_BODIES[0]]),
)
