import sys
import uuid

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import RequestFactory
from django.urls import URLResolver, path
from django.urls.resolvers import RegexPattern

from annotation.relevance.api import GradeApi
from core.lazy_views import LazyView, lazy_views

VIEWS = """
from django.http import HttpResponse
from django.views import View
from django.views.decorators.csrf import csrf_exempt


@csrf_exempt
def hello(request, name):
    return HttpResponse(f"hello {name}")


class Greeting(View):
    greeting = "hi"

    def get(self, request):
        return HttpResponse(self.greeting)
"""


@pytest.fixture
def module(tmp_path, monkeypatch):
    """A module of views of its own name, on the path but not imported yet."""
    name = f"lazy_views_sample_{uuid.uuid4().hex}"
    (tmp_path / f"{name}.py").write_text(VIEWS)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def _resolver(*patterns):
    return URLResolver(RegexPattern(r"^/"), list(patterns))


def test_it_imports_the_module_at_the_first_request_not_when_the_url_conf_is_built_reversed_or_resolved(
    module,
):
    views = lazy_views(module)
    resolver = _resolver(path("hello/<slug:name>/", views.hello, name="hello"))

    assert resolver.reverse("hello", name="ada") == "hello/ada/"
    match = resolver.resolve("/hello/ada/")
    assert module not in sys.modules

    response = match.func(RequestFactory().get("/hello/ada/"), **match.kwargs)

    assert response.content == b"hello ada"
    assert module in sys.modules


def test_it_names_the_view_as_django_would_without_importing_it(module):
    pattern = path("greet/", lazy_views(module).Greeting.as_view(), name="greet")
    match = _resolver(pattern).resolve("/greet/")

    assert (pattern.lookup_str, match._func_path) == (f"{module}.Greeting", f"{module}.Greeting")
    assert not hasattr(pattern.callback, "view_class")
    assert module not in sys.modules


def test_it_makes_a_class_based_view_with_its_initkwargs_and_reads_the_views_attributes_through(module):
    greet = lazy_views(module).Greeting.as_view(greeting="bonjour")
    hello = lazy_views(module).hello

    assert greet(RequestFactory().get("/")).content == b"bonjour"
    assert greet.view_initkwargs == {"greeting": "bonjour"}
    assert hello.csrf_exempt is True  # what Django's CSRF middleware reads before the view runs


def test_it_reads_a_drf_views_class_and_csrf_exemption_through():
    view = lazy_views("annotation.relevance.api").GradeApi.as_view()

    assert (view.cls, view.csrf_exempt) == (GradeApi, True)  # what drf-spectacular and Django read


@pytest.mark.parametrize(
    ("view", "refusal"),
    [
        (lambda m: lazy_views(m).Greeting, "is a class-based view: name it with .as_view()"),
        (lambda m: lazy_views(m).hello.as_view(), "is not a class-based view"),
        (lambda m: lazy_views(m).helo, "names a view that does not exist"),
    ],
)
def test_it_refuses_at_the_first_call_a_view_named_wrongly(module, view, refusal):
    lazy: LazyView = view(module)

    with pytest.raises(ImproperlyConfigured, match=refusal):
        lazy(RequestFactory().get("/"))
