"""What a form's menus cost to draw: Django's template renderer, its Jinja2 renderer and the project's
(core/form_renderer.py, which draws the choice widgets in Python), on one form of N options, in one run.

The form is a judge menu's shape: a select of N options in groups (a task each), a multiple select of the
same, and a checkbox list of N/5 assessors, none chosen but two. Each renderer draws the same form, best
of BENCH_BEST_OF after a warm-up; the figure is each renderer's time as a share of Django's, beside the
machine's load. A last column is what building the options alone costs (the widgets' context, which
every renderer needs): the floor under any renderer.

    DEBUG=1 .venv/bin/python bench/bench_forms.py [--options 200 1000 3000]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import best_ms  # noqa: E402  (sets the checkout on the path too; no database is made)

BEST_OF = int(os.environ.get("BENCH_BEST_OF", "5"))


def menu_form(options: int) -> Any:
    """A form class with a grouped select and multiple select of `options` judges and a checkbox list of
    a fifth as many assessors."""
    from django import forms

    tasks = ["relevance", "ntr", "nuggets", "support"]
    judges = [f"judge-{i:04d} <{i % 7}>" for i in range(options)]
    grouped = [("", "---------")] + [
        (task, [(name, name) for name in judges[t :: len(tasks)]]) for t, task in enumerate(tasks)
    ]
    people = [(i, f"assessor-{i:03d}") for i in range(max(1, options // 5))]

    class MenuForm(forms.Form):
        machine_judge = forms.ChoiceField(choices=grouped)
        human_judge = forms.MultipleChoiceField(choices=grouped[1:])
        assessors = forms.MultipleChoiceField(choices=people, widget=forms.CheckboxSelectMultiple)

    return MenuForm, {"machine_judge": judges[1], "human_judge": judges[:2], "assessors": [0, 1]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--options", type=int, nargs="+", default=[200, 1000, 3000])
    args = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "assay.settings")
    import django

    django.setup()
    from django.forms.renderers import DjangoTemplates, Jinja2

    from core.form_renderer import FormRenderer

    renderers = {"django": DjangoTemplates(), "jinja2": Jinja2(), "assay": FormRenderer()}
    if importlib.util.find_spec("jinja2") is None:  # the test extras bring it (through mkdocs), not the app
        print("jinja2 is not installed: its renderer is left out")
        del renderers["jinja2"]
    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; best of {BEST_OF}")
    print(
        f"{'options':>8} {'django ms':>10} {'jinja2 ms':>10} {'assay ms':>9} {'jinja2':>7} {'assay':>7} {'options only':>13}"
    )
    for options in args.options:
        form_class, data = menu_form(options)
        drawn = {}
        for name, renderer in renderers.items():
            form = form_class(data, renderer=renderer)
            form.is_valid()
            drawn[name] = best_ms(lambda form=form: form.as_p(), BEST_OF)
        drawn.setdefault("jinja2", float("nan"))
        form = form_class(data)
        form.is_valid()

        def contexts(form: Any = form) -> None:
            for bound in form:
                bound.field.widget.get_context(bound.html_name, bound.value(), bound.build_widget_attrs({}))

        building = best_ms(contexts, BEST_OF)
        base = drawn["django"]
        print(
            f"{options:>8} {base:>10.1f} {drawn['jinja2']:>10.1f} {drawn['assay']:>9.1f} "
            f"{drawn['jinja2'] / base:>6.2f}x {drawn['assay'] / base:>6.2f}x {building:>10.1f} ms"
        )
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
