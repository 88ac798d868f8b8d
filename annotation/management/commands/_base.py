"""What the import and export commands share: resolving a collection or judge, turning failures into CommandError."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from annotation.formats import ImportFailed
from annotation.models import Collection, Judge


class CollectionCommand(BaseCommand):
    """A command that works on one collection named by --collection."""

    create_collection = False

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--collection", required=True, help="Name of the collection.")

    def get_collection(self, name: str) -> Collection:
        if self.create_collection:
            collection, _ = Collection.objects.get_or_create(name=name)
            return collection
        try:
            return Collection.objects.get(name=name)
        except Collection.DoesNotExist:
            raise CommandError(f"no collection named {name!r}") from None

    def get_judge(self, name: str) -> Judge:
        try:
            return Judge.objects.get(name=name)
        except Judge.DoesNotExist:
            raise CommandError(f"no judge named {name!r}") from None

    def run_import(self, action: Callable[[], Any]) -> Any:
        # One transaction around everything the command writes, the collection or judge it creates included.
        try:
            with transaction.atomic():
                return action()
        except ImportFailed as exc:
            raise CommandError(f"nothing was imported:\n{exc}") from None
