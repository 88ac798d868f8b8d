"""What the import and export commands share: resolving a collection or judge, turning failures into CommandError,
showing the progress of long work."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser, OutputWrapper
from django.core.validators import validate_slug
from django.db import models, transaction

from annotation.formats.base import ImportFailed
from annotation.judge_access import FILE_KINDS, ImportJudgeRefused, import_judge_refusal
from annotation.models import Collection, Judge
from annotation.selectors import known_names
from annotation.services import import_judge_get_or_create

M = TypeVar("M", bound=models.Model)


def named(queryset: models.QuerySet[M], value: str, *, kind: str, field: str = "name", where: str = "") -> M:
    """The object of `queryset` whose `field` is `value`, or a CommandError naming the value and the valid ones.

    Every command that takes a name (collection, judge, run, pool, assignment, campaign, user) looks it up
    through here, so a typo is answered with the names the user could have meant rather than Django's
    "matching query does not exist". `where` says where it was looked for (" in collection demo").
    """
    try:
        return queryset.get(**{field: value})
    except ObjectDoesNotExist:
        raise CommandError(
            f"no {kind} named {value!r}{where}; {known_names(queryset, kind=kind, field=field)}"
        ) from None


def active_users() -> models.QuerySet[User]:
    return get_user_model().objects.filter(is_active=True)


def user_named(username: str) -> User:
    """An active account by username, or a CommandError listing the active usernames."""
    return named(active_users(), username, kind="user", field=get_user_model().USERNAME_FIELD)


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


def _plain(text: str) -> str:
    return text


class CommandProgress:
    """How far a long command has got, on stderr; called as `progress(done, total)` by the service.

    On a terminal a bar redrawn in place; at --verbosity 2 or more a plain line now and then (a log or a
    pipe keeps a trace without a line per step); otherwise, and always at --verbosity 0, nothing, so
    scripts and tests see only the command's output. `close()` ends a bar's line.
    """

    WIDTH = 30
    # Redraw a bar at most this often; a plain line at most every LINE_EVERY_S. The first and last
    # steps always show.
    BAR_EVERY_S = 0.1
    LINE_EVERY_S = 1.0

    def __init__(self, stream: OutputWrapper, *, verbosity: int, unit: str) -> None:
        self.stream = stream
        self.unit = unit
        self.bar = stream.isatty()
        self.enabled = verbosity >= 2 or (verbosity >= 1 and self.bar)
        self.every_s = self.BAR_EVERY_S if self.bar else self.LINE_EVERY_S
        self.shown: tuple[int, int] | None = None
        self.shown_at = float("-inf")
        self.open_line = False

    def __call__(self, done: int, total: int, detail: str = "") -> None:
        if not self.enabled or total <= 0 or (done, total) == self.shown:
            return
        now = time.monotonic()
        if done < total and self.shown is not None and now - self.shown_at < self.every_s:
            return
        self.shown, self.shown_at = (done, total), now
        text = f"{done}/{total} {self.unit}" + (f" {detail}" if detail else "")
        if self.bar:
            filled = self.WIDTH * min(done, total) // total
            self.stream.write(
                f"\r[{'#' * filled}{'.' * (self.WIDTH - filled)}] {text}", style_func=_plain, ending=""
            )
            self.stream.flush()
            self.open_line = True
        else:
            self.stream.write(text, style_func=_plain)

    def close(self) -> None:
        if self.open_line:
            self.stream.write("")
            self.open_line = False


class CollectionCommand(BaseCommand):
    """A command that works on one collection named by --collection."""

    create_collection = False

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--collection", required=True, help="Name of the collection.")

    def get_collection(self, name: str) -> Collection:
        if self.create_collection:
            collection, _ = Collection.objects.get_or_create(name=check_collection_name(name))
            return collection
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
                return action()
        except ImportFailed as exc:
            raise CommandError(f"nothing was imported:\n{exc}") from None
