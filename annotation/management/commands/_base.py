"""What the import and export commands share: resolving a collection or judge, turning failures into CommandError."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.core.validators import validate_slug
from django.db import transaction

from annotation.formats.base import ImportFailed
from annotation.judge_access import import_judge_refusal
from annotation.models import Collection, Judge
from annotation.services import judge_get_or_create


def check_collection_name(name: str) -> str:
    """A new collection's name must be a slug: pages and the API address collections by name in URLs."""
    try:
        validate_slug(name)
    except ValidationError:
        raise CommandError(
            f"collection name {name!r} is not a slug: use letters, digits, '-' and '_' only "
            "(e.g. 'ikat-2024')"
        ) from None
    return name


def import_judge_check(name: str) -> None:
    """Refuse a --judge an import may not write as (annotation.judge_access.import_judge_refusal).

    Every import command that takes a judge calls this before it writes, so no file lands in a person's
    labels.
    """
    refusal = import_judge_refusal(name)
    if refusal:
        raise CommandError(refusal)


def import_judge(*, name: str, path: str, kind: str = Judge.Kind.IMPORTED, model: str = "") -> Judge:
    """The judge an import writes as, created (as an imported-file judge by default) if new."""
    import_judge_check(name)
    return judge_get_or_create(name=name, kind=kind, model=model, description=f"imported from {path}")


class CollectionCommand(BaseCommand):
    """A command that works on one collection named by --collection."""

    create_collection = False

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--collection", required=True, help="Name of the collection.")

    def get_collection(self, name: str) -> Collection:
        if self.create_collection:
            collection, _ = Collection.objects.get_or_create(name=check_collection_name(name))
            return collection
        try:
            return Collection.objects.get(name=name)
        except Collection.DoesNotExist:
            raise CommandError(f"no collection named {name!r}") from None

    def get_judge(self, name: str) -> Judge:
        try:
            return Judge.objects.get(name=name)
        except Judge.DoesNotExist:
            known = list(Judge.objects.order_by("name").values_list("name", flat=True)[:11])
            hint = ", ".join(known[:10]) + (", ..." if len(known) > 10 else "") if known else "none yet"
            raise CommandError(f"no judge named {name!r}; known judges: {hint}") from None

    def run_import(self, action: Callable[[], Any]) -> Any:
        # One transaction around everything the command writes, the collection or judge it creates included.
        try:
            with transaction.atomic():
                return action()
        except ImportFailed as exc:
            raise CommandError(f"nothing was imported:\n{exc}") from None
