"""What the apps built on annotation add to its pages, registered at start-up (AppConfig.ready).

The organiser's home and a collection's dashboard belong to annotation, which imports nothing from the
apps above it; judging lists its judge jobs there and crowd its campaigns by registering a provider here.
A provider returns plain data (labels, URLs already reversed), so annotation's templates never name
another app's URLs or models, and a page works with whichever apps are installed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

P = TypeVar("P")


@dataclass(frozen=True)
class Link:
    label: str
    url: str
    note: str = ""
    # The element id pages and tests find the link by.
    id: str = ""


@dataclass(frozen=True)
class Section:
    """A titled list of links on a page."""

    title: str
    id: str
    links: list[Link]
    empty: str = "None yet."


@dataclass(frozen=True)
class JobLine:
    """One background job of any app, as a jobs table lists it."""

    label: str
    url: str
    collection: str
    what: str
    status: str
    progress: str = ""


@dataclass
class Registry(Generic[P]):
    """Providers of one extension point, in the order the apps registered them."""

    providers: list[P] = field(default_factory=list)

    def register(self, provider: P) -> P:
        if provider not in self.providers:
            self.providers.append(provider)
        return provider

    def __iter__(self) -> Iterator[P]:
        return iter(self.providers)


# Sections of the organiser's home (crowd: its campaigns).
HOME_SECTIONS: Registry[Callable[[], Section]] = Registry()
# Kinds of work on everybody's home, beside relevance, support and nuggets (crowd: its batches).
WORK_LINKS: Registry[Callable[[], Link]] = Registry()
# Links at the top of a collection's dashboard, given the collection's name (judging: live agreement).
COLLECTION_LINKS: Registry[Callable[[str], Link]] = Registry()
# Background jobs, of one collection (its id) or of all (None), newest first, at most `limit`.
JOB_LISTERS: Registry[Callable[[int | None, int], list[JobLine]]] = Registry()


def job_lines(*, collection_id: int | None, limit: int) -> list[JobLine]:
    return [line for lister in JOB_LISTERS for line in lister(collection_id, limit)]
