"""The project's form renderer draws the select, the checkbox list and the radio list in Python: each must
be byte for byte what Django's own templates draw, and anything it does not copy must go to them."""

from __future__ import annotations

import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django import forms
from django.conf import settings
from django.forms.renderers import DjangoTemplates, get_default_renderer
from django.utils.functional import cached_property
from django.utils.safestring import mark_safe
from django.utils.translation import gettext_lazy
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from annotation.models import Judge
from core import form_renderer
from core.form_renderer import FormRenderer
from tests.factories import JudgeFactory

DJANGO = DjangoTemplates()
OURS = FormRenderer()
HOSTILE = "<script>alert('x')</script> & \"quoted\" {{ not a variable }} {% not a tag %}"


class DisablingSelect(forms.Select):
    """The usual way to disable options: a widget that adds `disabled` to some of them."""

    def create_option(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        option = super().create_option(*args, **kwargs)
        if str(option["value"]).startswith("off"):
            option["attrs"]["disabled"] = True
        return option


class DisablingCheckboxes(forms.CheckboxSelectMultiple):
    def create_option(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        option = super().create_option(*args, **kwargs)
        if str(option["value"]).startswith("off"):
            option["attrs"]["disabled"] = True
        return option


class DisablingRadios(forms.RadioSelect):
    def create_option(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        option = super().create_option(*args, **kwargs)
        if str(option["value"]).startswith("off"):
            option["attrs"]["disabled"] = True
        return option


FLAT = [("", "---------"), ("a", "Alice"), ("b", "Bob"), ("off-c", "Carol (away)"), (3, 3), (0, "zero")]
GROUPED = [
    ("", "---------"),
    ("relevance", [("a", "Alice"), ("b", "Bob")]),
    ("ntr", [("off-x", "crowd-x"), ("y", "crowd-y")]),
    ("loose", "A loose choice between groups"),
]
HOSTILE_CHOICES = [
    (HOSTILE, HOSTILE),
    ("safe", mark_safe("<b>already safe</b>")),
    (mark_safe("<i>safe value</i>"), "x"),
    (HOSTILE, [("in-group", HOSTILE), ("'", '"')]),
]
ODD_VALUES = [
    (None, "none"),
    (True, "true"),
    (False, "false"),
    (Decimal("1.50"), "decimal"),
    (1.25, 12345.5),
    ((1, 2), "a tuple"),
    (datetime.date(2025, 3, 4), datetime.date(2025, 3, 4)),
    ("lazy", gettext_lazy("Finite-population correction")),
]
ATTRS: list[dict[str, Any] | None] = [
    None,
    {"id": "id_menu"},
    {"id": "id_menu", "class": "wide", "data-x": HOSTILE, "required": True, "hidden": False, "title": None},
    {"id": "", "class": "", "autofocus": True, "size": 10, "aria-label": gettext_lazy("Judge")},
    {"class": mark_safe("<safe>"), "onclick": "alert(\"x\") && '<'"},
]
WIDGETS = [
    forms.Select,
    forms.SelectMultiple,
    DisablingSelect,
    forms.CheckboxSelectMultiple,
    DisablingCheckboxes,
    forms.RadioSelect,
    DisablingRadios,
]
CHOICES = [FLAT, GROUPED, HOSTILE_CHOICES, ODD_VALUES, []]
VALUES: list[Any] = [None, "", "a", ["a", "b"], ["off-x", "y", "3"], 0, "0", [HOSTILE, "safe"], True, [None]]


def both(widget: forms.Widget, name: str, value: Any, attrs: dict[str, Any] | None) -> tuple[str, str]:
    return (
        widget.render(name, value, attrs=attrs, renderer=DJANGO),
        widget.render(name, value, attrs=attrs, renderer=OURS),
    )


def test_it_is_the_projects_form_renderer():
    assert settings.FORM_RENDERER == "core.form_renderer.FormRenderer"
    assert isinstance(get_default_renderer(), FormRenderer)
    assert OURS.drawn == {form_renderer.SELECT, form_renderer.CHECKBOX_SELECT, form_renderer.RADIO}


@pytest.mark.parametrize("widget_class", WIDGETS)
@pytest.mark.parametrize("choices", CHOICES)
@pytest.mark.parametrize("attrs", ATTRS)
def test_it_draws_each_choice_widget_as_djangos_templates_do(widget_class, choices, attrs):
    widget = widget_class(choices=choices)
    for value in VALUES:
        theirs, ours = both(widget, "judge", value, attrs)

        assert ours == theirs


@pytest.mark.parametrize("widget_class", WIDGETS)
def test_it_draws_the_widgets_own_attrs_and_a_hostile_name(widget_class):
    widget = widget_class(choices=GROUPED, attrs={"class": "menu", "data-hostile": HOSTILE, "multiple": True})

    theirs, ours = both(widget, HOSTILE, ["a"], {"id": HOSTILE})

    assert ours == theirs
    assert "&lt;script&gt;" in ours


def test_it_draws_options_marked_selected_disabled_and_grouped():
    # The comparisons above would pass for a renderer that drew nothing twice: this one says what is drawn.
    html = DisablingSelect(choices=GROUPED).render("judge", "b", attrs={"id": "id_judge"}, renderer=OURS)

    assert '<optgroup label="relevance">' in html
    assert '<option value="b" selected>Bob</option>' in html
    assert '<option value="off-x" disabled>crowd-x</option>' in html


def test_it_draws_a_checkbox_list_with_its_ids_and_labels():
    widget = forms.CheckboxSelectMultiple(choices=[("a", "Alice"), ("b", HOSTILE)])

    html = widget.render("assessors", ["b"], attrs={"id": "id_assessors"}, renderer=OURS)

    assert '<div id="id_assessors">' in html
    assert (
        '<label for="id_assessors_0"><input type="checkbox" name="assessors" value="a" id="id_assessors_0">'
        in html
    )
    assert 'value="b" id="id_assessors_1" checked>\n &lt;script&gt;' in html


def test_it_draws_the_other_choice_widgets_as_djangos_templates_do():
    cases = [
        (forms.NullBooleanSelect(), "unknown"),
        (forms.NullBooleanSelect(), True),
        (forms.SelectDateWidget(years=[2024, 2025]), datetime.date(2025, 3, 4)),
        (forms.MultiWidget([forms.Select(choices=FLAT), forms.RadioSelect(choices=FLAT)]), ["a", "b"]),
    ]
    for widget, value in cases:
        theirs, ours = both(widget, "field", value, {"id": "id_field"})

        assert ours == theirs


class EveryWidget(forms.Form):
    judge = forms.ChoiceField(choices=GROUPED, help_text=HOSTILE)
    judges = forms.MultipleChoiceField(choices=FLAT, widget=forms.CheckboxSelectMultiple, required=False)
    method = forms.ChoiceField(choices=HOSTILE_CHOICES, widget=forms.RadioSelect)
    several = forms.MultipleChoiceField(choices=GROUPED, required=False)
    name = forms.CharField(initial=HOSTILE)
    fpc = forms.BooleanField(required=False)
    answer = forms.NullBooleanField()


@pytest.mark.parametrize(
    "data",
    [
        None,
        {"judge": "b", "judges": ["a", "off-c"], "method": HOSTILE, "several": ["a", "y"], "answer": "true"},
    ],
)
@pytest.mark.parametrize("auto_id", ["id_%s", False])
def test_it_draws_whole_forms_as_djangos_renderer_does(data, auto_id):
    for layout in ("as_div", "as_p", "as_table", "as_ul"):
        theirs = getattr(EveryWidget(data, auto_id=auto_id, renderer=DJANGO), layout)()
        ours = getattr(EveryWidget(data, auto_id=auto_id, renderer=OURS), layout)()

        assert ours == theirs


texts = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=12)
choice = st.tuples(texts, texts)
choices_drawn = st.lists(st.one_of(choice, st.tuples(texts, st.lists(choice, max_size=3))), max_size=5)


@hypothesis_settings(max_examples=60, derandomize=True, deadline=None, database=None)
@given(
    widget_class=st.sampled_from(WIDGETS),
    choices=choices_drawn,
    value=st.one_of(texts, st.lists(texts, max_size=3)),
    name=texts,
    attrs=st.dictionaries(
        st.sampled_from(["id", "class", "title", "data-x"]), st.one_of(texts, st.booleans())
    ),
)
def test_it_draws_any_text_as_djangos_templates_do(widget_class, choices, value, name, attrs):
    theirs, ours = both(widget_class(choices=choices), name, value, attrs)

    assert ours == theirs


class CustomOption(forms.Select):
    option_template_name = "django/forms/widgets/input_option.html"


def _called() -> str:
    return "called"


@pytest.mark.parametrize(
    ("widget", "attrs"),
    [
        (CustomOption(choices=FLAT), None),  # an option drawn by a template of its own
        (forms.Select(choices=FLAT), {"data-call": _called}),  # a template calls what it reads
        (forms.CheckboxSelectMultiple(choices=FLAT), {"id": "x", "data-call": _called}),
        (forms.Select(choices=FLAT), {"items": [("data-from-items", "1")]}),
        (forms.RadioSelect(choices=FLAT), {"items": [("data-from-items", "1")]}),
        (forms.Select(choices=[(_called, "a callable value")]), None),
        (forms.RadioSelect(choices=FLAT), {"title": _called}),
    ],
)
def test_it_hands_what_it_does_not_copy_to_the_templates(widget, attrs, monkeypatch):
    drawn = []
    monkeypatch.setattr(form_renderer, "DRAW", {k: _spy(v, drawn) for k, v in form_renderer.DRAW.items()})

    theirs, ours = both(widget, "judge", "a", attrs)

    assert ours == theirs
    assert drawn == [form_renderer.Unusual]


def _spy(draw: Any, seen: list[Any]) -> Any:
    def spied(widget: Any) -> str:
        try:
            return draw(widget)
        except form_renderer.Unusual:
            seen.append(form_renderer.Unusual)
            raise

    return spied


def test_it_draws_an_apps_override_of_a_template_by_that_template(tmp_path: Path):
    # An installed app (or DIRS) that overrides an option's template changes every menu's markup: the
    # renderer must then leave the menus to the templates, not draw Django's markup.
    override = tmp_path / "django/forms/widgets/select_option.html"
    override.parent.mkdir(parents=True)
    override.write_text('<option data-own="1" value="{{ widget.value }}">{{ widget.label }}</option>')

    class Overridden(FormRenderer):
        @cached_property
        def engine(self) -> Any:
            return self.backend(
                {
                    "APP_DIRS": True,
                    "DIRS": [tmp_path, Path(forms.__file__).parent / "templates"],
                    "NAME": "overridden",
                    "OPTIONS": {},
                }
            )

    renderer = Overridden()
    html = forms.Select(choices=FLAT).render("judge", "a", renderer=renderer)

    assert 'data-own="1"' in html
    assert renderer.drawn == {form_renderer.CHECKBOX_SELECT, form_renderer.RADIO}


@pytest.mark.django_db
def test_it_draws_model_choices_as_djangos_templates_do():
    for name in ["alice", HOSTILE, "bob & <carol>"]:
        JudgeFactory(name=name)

    class Judges(forms.Form):
        one = forms.ModelChoiceField(queryset=Judge.objects.order_by("name"), to_field_name="name")
        several = forms.ModelMultipleChoiceField(queryset=Judge.objects.order_by("name"))
        ticked = forms.ModelMultipleChoiceField(
            queryset=Judge.objects.order_by("name"), widget=forms.CheckboxSelectMultiple
        )
        picked = forms.ModelChoiceField(queryset=Judge.objects.order_by("name"), widget=forms.RadioSelect)

    first = Judge.objects.order_by("name").first()
    for data in [None, {"one": HOSTILE, "several": [first.pk], "ticked": [first.pk], "picked": first.pk}]:
        assert Judges(data, renderer=OURS).as_div() == Judges(data, renderer=DJANGO).as_div()
