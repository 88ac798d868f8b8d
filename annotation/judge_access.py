"""Whose labels a user may read, and which judges a file may be imported as: one rule each, for pages,
the API, commands and the console alike.

Organisers (staff) read every judge. An assessor reads the organiser-owned judges, that is machines (LLM,
NLI) and imported files (the official qrels, a published nugget set), which only organisers create,
through commands, jobs and the admin; and their own assessor judge. Never another assessor's judge, nor a
crowd aggregate: those are people's labels, and seeing them would let one assessor copy another.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet

from annotation.formats.base import MAX_JUDGE_NAME, id_problem
from annotation.models import Judge
from annotation.permissions import is_organiser
from core.names import assessor_judge_name, judge_name_problem

SHARED_KINDS = (Judge.Kind.LLM, Judge.Kind.NLI, Judge.Kind.IMPORTED)
NOT_SHARED = (
    "assessors may choose machine (LLM, NLI) and imported-file judges, and their own; "
    "other assessors' and crowd judges are for organisers"
)


def judges_readable(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[Judge]:
    """The judges whose labels `user` may read (nothing for an anonymous user)."""
    if not user.is_authenticated:
        return Judge.objects.none()
    if is_organiser(user):
        return Judge.objects.all()
    return Judge.objects.filter(Q(kind__in=SHARED_KINDS) | Q(user=user))


def judge_readable(*, user: AbstractBaseUser | AnonymousUser, judge: Judge) -> bool:
    if getattr(user, "is_staff", False) and user.is_authenticated:
        return True
    return user.is_authenticated and (judge.kind in SHARED_KINDS or judge.user_id == user.pk)


# Labels of these judges come from people, through their own pages and the crowd aggregation; a file
# imported under their name would silently replace them.
PEOPLES_JUDGES: dict[str, str] = {
    Judge.Kind.ASSESSOR: "an assessor",
    Judge.Kind.CROWD: "a crowd aggregate",
    Judge.Kind.ADJUDICATED: "an adjudication",
}


def import_judge_refusal(name: str, *, kind: str = Judge.Kind.IMPORTED) -> str | None:
    """Why labels may not be written from a file or a machine as judge `name` (None when they may); the
    rule of `judge_name_refusal`, the judge of that name read here."""
    return judge_name_refusal(name, kind=kind, existing=Judge.objects.filter(name=name).only("kind").first())


def judge_name_refusal(name: str, *, kind: str, existing: Judge | None) -> str | None:
    """Why labels of `kind` may not be written as judge `name`, whose row is `existing` (None if new).

    Refused: a name pages cannot show or address (see `id_problem`), an assessor's or a crowd judge, and a
    new name that starts like a spreadsheet formula or is kept for judges an app makes itself
    (core.names.judge_name_problem: an assessor's, a crowd worker's, a crowd campaign's aggregate), whose
    own judge could then not be created. `kind` is the kind of judge
    the labels are written as: a file of crowd labels (kind crowd) may go into a crowd judge, never into
    an assessor's.
    """
    problem = id_problem(name, "judge name", MAX_JUDGE_NAME)
    if problem:
        return f"{problem}: a judge name is at most {MAX_JUDGE_NAME} characters, without '/'"
    if existing is not None and existing.kind in PEOPLES_JUDGES and existing.kind != kind:
        return (
            f"judge {name!r} is {PEOPLES_JUDGES[existing.kind]}: writing as it would replace their own "
            "labels; choose another judge name"
        )
    if existing is None:
        return judge_name_problem(name, kind=kind)
    return None


class ImportJudgeRefused(Exception):
    """Labels may not be written as the judge asked for (a file's, a machine's, a crowd's); the message
    says why and what to do."""


class AssessorJudgeTaken(PermissionDenied):
    """An account's assessor judge cannot be created: its name is another judge's. A PermissionDenied, so
    a page or the API asked to record the account's label answers 403 with the reason, not a 500."""


def assessor_judge_refusal(*, username: str, user_id: int | None = None) -> str | None:
    """Why the account `username` could not get its assessor judge (None when it can): a judge of another
    kind or another account already has the name, and judge names are unique. Asked before an account is
    created, so an organiser hears it then instead of the account failing on every label it gives."""
    name = assessor_judge_name(username)
    taken = Judge.objects.filter(name=name).only("kind", "user_id").first()
    if taken is None or (
        taken.kind == Judge.Kind.ASSESSOR and user_id is not None and taken.user_id == user_id
    ):
        return None
    return (
        f"the judge {name!r} that would hold {username}'s labels already exists as a {taken.kind} judge "
        "of other labels: choose another username, or rename that judge on its admin page first"
    )


# The kinds a file's labels may be imported as. An assessor judge is one account's own labels, given on
# the assessment pages, and needs that user: a file cannot be one.
FILE_KINDS = (Judge.Kind.IMPORTED, Judge.Kind.LLM, Judge.Kind.NLI, Judge.Kind.CROWD)
MODEL_KINDS = (Judge.Kind.LLM, Judge.Kind.NLI)


def file_judge_refusal(
    name: str, *, kind: str | None, model: str = "", prompt_version: str = ""
) -> str | None:
    """Why a file may not be imported as judge `name` of `kind` (None when it may).

    `kind` None asks for nothing: a new judge is an imported file, an existing one stays as it is. A
    kind, model or prompt version asked for must be the existing judge's own: an import never changes
    them, because a judge's kind says in every report what its labels are (an LLM's beside the people's
    on the agreement pages, an imported file's as a reference), and labels already given under one kind
    or model would silently be counted as another's.
    """
    if kind == Judge.Kind.ASSESSOR:
        return (
            "a file cannot be imported as an assessor judge: an assessor judge holds one user account's own "
            f"labels, given on the assessment pages; import it as one of {', '.join(FILE_KINDS)}"
        )
    if kind is not None and kind not in FILE_KINDS:
        return f"unknown judge kind {kind!r}; one of {', '.join(FILE_KINDS)}"
    existing = Judge.objects.filter(name=name).first()
    # Asked for nothing, a file goes into a machine's or file's judge as it is; never into people's.
    kept = existing is not None and existing.kind not in PEOPLES_JUDGES
    effective = kind or (existing.kind if existing is not None and kept else Judge.Kind.IMPORTED)
    if (model or prompt_version) and effective not in MODEL_KINDS:
        return "a model and a prompt version describe an LLM or NLI judge: give the judge kind llm or nli"
    refusal = import_judge_refusal(name, kind=effective)
    if refusal or existing is None:
        return refusal
    asked = {"kind": kind or "", "model": model, "prompt version": prompt_version}
    held = {"kind": existing.kind, "model": existing.model, "prompt version": existing.prompt_version}
    differs = [what for what, value in asked.items() if value and value != held[what]]
    if differs:
        said = ", ".join(f"{what} {held[what] or '(none)'!r}" for what in differs)
        wanted = ", ".join(f"{what} {asked[what]!r}" for what in differs)
        return (
            f"judge {name!r} exists with {said}, not {wanted}; an import does not change a judge, whose labels "
            "would then count as another kind's or model's: import under a new judge name, or change the "
            "judge on its admin page first"
        )
    return None
