"""URL converters for the names and ids pages put in their paths: Django's `str` and `path` without NUL.

With `str`, an address with `%00` in a turn id, a run or a user name reached its view, whose lookup sent
the NUL to PostgreSQL (its text cannot hold one) and failed: a 500. No name holds a NUL, so such an address
names nothing: with these it matches no route and is the 404 of any unknown address. Registered on import,
by the URL modules that use them (`<text:turn_id>`, `<textpath:run>`).
"""

from __future__ import annotations

from django.urls import register_converter
from django.urls.converters import PathConverter, StringConverter


class TextConverter(StringConverter):
    regex = "[^/\x00]+"


class TextPathConverter(PathConverter):
    regex = "[^\x00]+"


register_converter(TextConverter, "text")
register_converter(TextPathConverter, "textpath")
