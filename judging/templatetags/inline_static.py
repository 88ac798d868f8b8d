"""`{% inline_css "css/report.css" %}`: one of our static style sheets copied into the page, for the report
files written to disk and opened without a server. Pages Assay serves link the same file instead, so the
content security policy needs no inline styles."""

from __future__ import annotations

from pathlib import Path

from django import template
from django.contrib.staticfiles import finders
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


@register.simple_tag
def inline_css(path: str) -> SafeString:
    found = finders.find(path)
    if not isinstance(found, str):
        raise template.TemplateSyntaxError(f"no static file {path!r}")
    css = Path(found).read_text(encoding="utf-8")
    # The sheet is ours, not user input; the one thing that could break out of <style> is refused.
    if "</style" in css.lower():
        raise template.TemplateSyntaxError(f"{path!r} contains '</style'")
    return mark_safe(f"<style>\n{css}</style>")  # noqa: S308
