"""The project's form renderer (settings.FORM_RENDERER): Django's own, with its choice widgets drawn in Python.

Django draws a menu by rendering `select_option.html`, and within it `attrs.html`, once per option, so a
form whose menus offer every judge of a large collection spent most of its request there; its Jinja2
renderer still renders a template per option (docs/performance.md, "Menus drawn in Python"). This
renderer writes the markup of Django's templates for the select, the checkbox list and the radio list
itself, byte for byte (tests/core/test_form_renderer.py compares it with Django's renderer over every
case those templates have), and leaves everything else to the templates.

It keeps to the templates' rules rather than re-deciding them: every shown value goes through the
template engine's own `render_value_in_context` (localisation, escaping, safe strings) and the option
values through the `stringformat` filter the templates apply. Where the templates would do something this
module does not copy, it hands the widget back to them whole: a widget whose templates an app overrides,
an option drawn by a template of its own, a value a template would call (a callable), an `attrs` holding
the key `items` (which the templates would iterate in place of the attributes).
"""

from __future__ import annotations

import functools
import html
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from django import forms
from django.forms.renderers import DjangoTemplates
from django.http import HttpRequest
from django.template import Context
from django.template.base import render_value_in_context
from django.template.defaultfilters import stringformat
from django.utils.safestring import SafeData

WIDGETS = "django/forms/widgets/"
SELECT = WIDGETS + "select.html"
SELECT_OPTION = WIDGETS + "select_option.html"
CHECKBOX_SELECT = WIDGETS + "checkbox_select.html"
RADIO = WIDGETS + "radio.html"
CHECKBOX_OPTION = WIDGETS + "checkbox_option.html"
RADIO_OPTION = WIDGETS + "radio_option.html"
MULTIPLE_INPUT = WIDGETS + "multiple_input.html"
INPUT_OPTION = WIDGETS + "input_option.html"
INPUT = WIDGETS + "input.html"
ATTRS = WIDGETS + "attrs.html"

# Each widget template drawn here, with every template its markup comes from: all must be Django's own.
DRAWN_FROM = {
    SELECT: (SELECT, SELECT_OPTION, ATTRS),
    CHECKBOX_SELECT: (CHECKBOX_SELECT, MULTIPLE_INPUT, CHECKBOX_OPTION, INPUT_OPTION, INPUT, ATTRS),
    RADIO: (RADIO, MULTIPLE_INPUT, RADIO_OPTION, INPUT_OPTION, INPUT, ATTRS),
}
DJANGO_TEMPLATES = Path(forms.__file__).resolve().parent / "templates"

# What the form renderer's template engine renders with: autoescaping on, localisation and time zone as
# the settings say (a widget's template is rendered on its own, never inside a page's `{% localize %}`).
_CONTEXT = Context(autoescape=True)


class Unusual(Exception):
    """A value the templates treat in a way this module does not copy: the templates draw the widget."""


def _resolved(value: Any) -> Any:
    # A template calls a callable it reads (unless it asks not to be called); this module never does.
    if callable(value) and not getattr(value, "do_not_call_in_templates", False):
        raise Unusual
    return value


def _text(value: Any) -> str:
    """`{{ value }}`."""
    if type(value) is str:
        # What the engine makes of a plain string (no time zone, no localisation, escaped), without the
        # general steps that find that out: the text of nearly every option.
        return html.escape(value)
    return str(render_value_in_context(_resolved(value), _CONTEXT))


def _formatted(value: Any) -> str:
    """`{{ value|stringformat:'s' }}`: the filter gives a plain string, escaped, or keeps a safe string
    safe (it is marked is_safe)."""
    shown = stringformat(_resolved(value), "s")
    return str(shown) if isinstance(value, SafeData) else html.escape(shown)


def _attrs(attrs: Mapping[str, Any]) -> str:
    """attrs.html: each attribute but those False, a True one as a bare name."""
    if "items" in attrs:
        raise Unusual
    out = []
    for name, value in attrs.items():
        value = _resolved(value)
        if value is not False:
            out.append(f" {_text(name)}" if value is True else f' {_text(name)}="{_formatted(value)}"')
    return "".join(out)


def _select(widget: Mapping[str, Any]) -> str:
    """select.html, each option select_option.html."""
    out = [f'<select name="{_text(widget["name"])}"{_attrs(widget["attrs"])}>']
    for group, options, _index in _resolved(widget["optgroups"]):
        grouped = bool(_resolved(group))
        if grouped:
            out.append(f'\n  <optgroup label="{_text(group)}">')
        for option in options:
            if _resolved(option["template_name"]) != SELECT_OPTION:
                raise Unusual
            out.append(
                f'\n  <option value="{_formatted(option["value"])}"{_attrs(option["attrs"])}>'
                f"{_text(option['label'])}</option>\n"
            )
        if grouped:
            out.append("\n  </optgroup>")
    out.append("\n</select>")
    return "".join(out)


def _input(widget: Mapping[str, Any]) -> str:
    """input.html."""
    value = _resolved(widget["value"])
    try:
        # The template's `!=`, which is not `is not` (and a comparison that raises counts as false).
        shown = value != None  # noqa: E711
    except Exception:
        shown = False
    value_attr = f' value="{_formatted(value)}"' if shown else ""
    return (
        f'<input type="{_text(widget["type"])}" name="{_text(widget["name"])}"{value_attr}'
        f"{_attrs(widget['attrs'])}>\n"
    )


def _input_option(option: Mapping[str, Any]) -> str:
    """checkbox_option.html and radio_option.html: input_option.html and a line end."""
    attrs = _resolved(option["attrs"])
    wrapped = _resolved(option["wrap_label"])
    html = _input(option)
    if wrapped:
        for_id = _resolved(attrs.get("id"))
        label = f'<label for="{_text(for_id)}">' if for_id else "<label>"
        html = f"{label}{html} {_text(option['label'])}</label>"
    return html + "\n\n"


def _multiple_input(widget: Mapping[str, Any], option_template: str) -> str:
    """multiple_input.html (which checkbox_select.html and radio.html include), each option drawn by
    `option_template`."""
    attrs = _resolved(widget["attrs"])
    if "items" in attrs:
        raise Unusual
    out = ["<div"]
    id_, class_ = _resolved(attrs.get("id")), _resolved(attrs.get("class"))
    if id_:
        out.append(f' id="{_text(id_)}"')
    if class_:
        out.append(f' class="{_text(class_)}"')
    out.append(">")
    for group, options, _index in _resolved(widget["optgroups"]):
        grouped = bool(_resolved(group))
        if grouped:
            out.append(f"\n  <div><label>{_text(group)}</label>")
        for option in options:
            if _resolved(option["template_name"]) != option_template:
                raise Unusual
            out.append(f"<div>\n    {_input_option(option)}</div>")
        if grouped:
            out.append("\n  </div>")
    out.append("\n</div>")
    return "".join(out)


DRAW: dict[str, Callable[[Mapping[str, Any]], str]] = {
    SELECT: _select,
    CHECKBOX_SELECT: functools.partial(_multiple_input, option_template=CHECKBOX_OPTION),
    RADIO: functools.partial(_multiple_input, option_template=RADIO_OPTION),
}


class FormRenderer(DjangoTemplates):
    """Django's template renderer, with the select, checkbox list and radio list drawn by `DRAW`."""

    def render(self, template_name: str, context: dict[str, Any], request: HttpRequest | None = None) -> str:
        draw = DRAW.get(template_name) if template_name in self.drawn else None
        if draw is not None:
            try:
                return draw(context["widget"]).strip()
            except Unusual:
                pass
        return str(super().render(template_name, context, request=request))

    @functools.cached_property
    def drawn(self) -> frozenset[str]:
        """The widget templates drawn here: those whose templates all resolve to Django's own files (an
        installed app may override any of them, and its markup then is the one to draw)."""

        def own(name: str) -> bool:
            origin = self.get_template(name).template.origin.name
            return bool(Path(origin).resolve() == DJANGO_TEMPLATES / name)

        return frozenset(widget for widget, names in DRAWN_FROM.items() if all(own(name) for name in names))
