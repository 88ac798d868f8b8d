"""Views named in a URL conf without importing them: each module of views is imported by its first request.

Every process loads the URL conf, not only the web server: `manage.py check` (and so every command run
with checks) checks its patterns and handlers, and any reverse() builds them. Importing the views there
would import every page's code and the libraries behind it (numpy through the statistics, DRF's
serializers, drf-spectacular) into commands and workers that serve no page. A URL conf therefore names
its views through `lazy_views`, and reads as if it imported the module:

    views = lazy_views("judging.hybrid.views")
    urlpatterns = [
        path("", views.hybrid_estimate_page, name="hybrid-estimate"),
        path("live.json", views.LiveApi.as_view(), name="live"),
    ]

The web server loads every view once at its start instead (`views_load_all`, from assay/wsgi.py), so no
request pays for an import. A name that does not exist is an error at its first request, not at start-up:
tests/test_startup.py loads every lazy view of the URL conf, which is where a misspelt one is caught.
"""

from __future__ import annotations

import importlib
import inspect
import threading
from collections.abc import Callable, Iterator
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponseBase
from django.urls import URLPattern, URLResolver, get_resolver

_FUNCTION = object()  # the `initkwargs` of a view named without as_view(): a view function
_OWN = frozenset({"_initkwargs", "_view", "_lock"})


class LazyView:
    """One view (a function, or a class-based view's `as_view(**initkwargs)`), imported when first called.

    Django, DRF and drf-spectacular read attributes of a URL's view (`csrf_exempt` at every request, DRF's
    `cls` and `initkwargs` for the schema): each is the loaded view's, read through, except `view_class`.
    Django asks every pattern for that one the first time the URL conf is reversed or resolved, to name
    its view; answering would import every view there. Without it Django names the view by the
    `__module__` and `__qualname__` below, which are the loaded view's own (the module and name the URL conf
    gives), so a resolved URL names its view as it would without this wrapper.
    """

    def __init__(self, module: str, name: str, initkwargs: Any = _FUNCTION) -> None:
        self.__module__ = module
        self.__name__ = name
        self.__qualname__ = name
        self._initkwargs = initkwargs
        self._view: Callable[..., HttpResponseBase] | None = None
        self._lock = threading.Lock()

    def as_view(self, **initkwargs: Any) -> LazyView:
        """The class-based view `name` of `module`, as `View.as_view(**initkwargs)` will make it."""
        return LazyView(self.__module__, self.__name__, initkwargs)

    def load(self) -> Callable[..., HttpResponseBase]:
        """The view itself, imported on the first call (a request, or an attribute read)."""
        if self._view is None:
            with self._lock:
                if self._view is None:
                    self._view = self._import()
        return self._view

    def _import(self) -> Callable[..., HttpResponseBase]:
        where = f"{self.__module__}.{self.__name__}"
        target = getattr(importlib.import_module(self.__module__), self.__name__, None)
        if target is None:
            raise ImproperlyConfigured(f"the URL conf names a view that does not exist: {where}")
        is_class = inspect.isclass(target)
        if self._initkwargs is _FUNCTION:
            if is_class:
                raise ImproperlyConfigured(f"{where} is a class-based view: name it with .as_view()")
            return target  # type: ignore[no-any-return]  # a view function of the named module
        if not (is_class and hasattr(target, "as_view")):
            raise ImproperlyConfigured(f"{where} is not a class-based view, so it has no as_view()")
        return target.as_view(**self._initkwargs)  # type: ignore[no-any-return]

    def __call__(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        return self.load()(request, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        # Only names the instance does not hold reach here: the loaded view's attributes. Its own are
        # refused, for an instance not yet initialised (a copy) not to load itself looking for them.
        if name in _OWN or name == "view_class" or (name.startswith("__") and name.endswith("__")):
            raise AttributeError(name)
        return getattr(self.load(), name)

    def __repr__(self) -> str:
        return f"<LazyView {self.__module__}.{self.__name__}>"


class LazyViews:
    """A module of views as a URL conf names them: an attribute is a LazyView of the module's name."""

    def __init__(self, module: str) -> None:
        self._module = module

    def __getattr__(self, name: str) -> LazyView:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return LazyView(self._module, name)


def lazy_views(module: str) -> LazyViews:
    """The views of `module` (a dotted path), each imported when its URL is first requested."""
    return LazyViews(module)


def lazy_views_in(patterns: list[URLPattern | URLResolver]) -> Iterator[LazyView]:
    """Every LazyView of `patterns` and of the URL confs they include."""
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from lazy_views_in(pattern.url_patterns)
        elif isinstance(pattern.callback, LazyView):
            yield pattern.callback


def views_load_all() -> None:
    """Import every view of the root URL conf now: for the web server, whose requests should not wait on
    an import (a command or a worker loads none)."""
    for view in lazy_views_in(get_resolver().url_patterns):
        view.load()
