"""The base of every command that works on a collection: resolving the collection and the judge it
writes as, turning a refused judge or a rejected file into CommandError.

Public, so that the commands of the apps built on annotation (judging, crowd) share it; the app-agnostic
helpers (name lookups, progress) are in core.commands.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from annotation.formats.base import ImportFailed
from annotation.judge_access import FILE_KINDS, ImportJudgeRefused, import_judge_refusal
from annotation.models import Collection, Judge
from annotation.selectors import annotation_tables
from annotation.services import CollectionNameRefused, collection_get_or_create, import_judge_get_or_create
from core.bulk import statistics_refresh
from core.commands import named
from core.names import collection_name_problem
from core.progress import CommandProgress


def check_collection_name(name: str) -> str:
    """`name` if a new collection may have it, else a CommandError: for a command to refuse a bad name
    before slow work (a download) rather than when collection_get_or_create refuses it."""
    problem = collection_name_problem(name)
    if problem:
        raise CommandError(problem)
    return name


def import_judge_check(name: str, *, kind: str = Judge.Kind.IMPORTED) -> None:
    """Refuse a judge an import or a machine may not write as (annotation.judge_access.import_judge_refusal).

    Every import and machine-judge command that names the judge it writes as calls this before it writes,
    so no file or model lands in a person's labels. `kind` is the kind of judge it writes as.
    """
    refusal = import_judge_refusal(name, kind=kind)
    if refusal:
        raise CommandError(refusal)


def add_judge_kind_arguments(parser: CommandParser, *aliases: str) -> None:
    """--judge-kind, --model and --prompt-version: what the labels of a file are (an LLM's, an NLI
    model's, a crowd's), so that the pages comparing judges find them where they belong."""
    parser.add_argument(
        "--judge-kind",
        *aliases,
        dest="judge_kind",
        choices=[*FILE_KINDS, Judge.Kind.ASSESSOR],
        help="Kind of the judge (default: imported for a new judge, an existing judge as it is). An "
        "existing judge's kind is never changed; assessor is refused (it needs a user account).",
    )
    parser.add_argument("--model", default="", help="Model of an llm or nli judge (e.g. gpt-4o).")
    parser.add_argument("--prompt-version", default="", help="Prompt version of an llm judge.")


def import_judge(*, name: str, path: str, options: dict[str, Any] | None = None) -> Judge:
    """The judge an import writes as, created (as an imported-file judge unless --judge-kind says
    otherwise) if new; refused as annotation.judge_access.file_judge_refusal says."""
    options = options or {}
    try:
        return import_judge_get_or_create(
            name=name,
            kind=options.get("judge_kind"),
            model=options.get("model") or "",
            prompt_version=options.get("prompt_version") or "",
            source=path,
        )
    except ImportJudgeRefused as exc:
        raise CommandError(str(exc)) from None


class CollectionCommand(BaseCommand):
    """A command that works on one collection named by --collection."""

    create_collection = False

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--collection", required=True, help="Name of the collection.")

    def get_collection(self, name: str) -> Collection:
        if self.create_collection:
            try:
                return collection_get_or_create(name=name)
            except CollectionNameRefused as exc:
                raise CommandError(str(exc)) from None
        return named(Collection.objects.all(), name, kind="collection")

    def get_judge(self, name: str) -> Judge:
        return named(Judge.objects.all(), name, kind="judge")

    def command_progress(self, options: dict[str, Any], *, unit: str) -> CommandProgress:
        """A progress display on this command's stderr at the --verbosity it was run with."""
        return CommandProgress(self.stderr, verbosity=int(options.get("verbosity", 1)), unit=unit)

    def run_import(self, action: Callable[[], Any]) -> Any:
        # One transaction around everything the command writes, the collection or judge it creates included.
        try:
            with transaction.atomic():
                done = action()
        except ImportFailed as exc:
            raise CommandError(f"nothing was imported:\n{exc}") from None
        statistics_refresh(annotation_tables())
        return done
