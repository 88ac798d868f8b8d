"""nuggetizer's files in and out of a TREC RAG collection: created nuggets with their vital/okay labels,
and the support / partial_support / not_support assignments of answers (all or nothing, idempotent).

Every label lands through the writers of annotation.rag_nuggets.writer. A question of the file is a
turn of the collection (its turn id is the qid, as the TREC RAG answer import makes it); an answer is
the response of the run named `run_id` to that turn.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from django.db import transaction
from django.db.models import QuerySet

from annotation.formats.base import ImportFailed, Problems, excerpt
from annotation.labels.files import Upload, UploadRefused, judge_named
from annotation.labels.writer import JudgmentRefused, Written
from annotation.models import (
    Collection,
    Condition,
    Judge,
    Nugget,
    NuggetAssignment,
    NuggetSetTurn,
    NuggetSupport,
    Response,
    ResponseSentence,
    Run,
    Turn,
)
from annotation.rag_nuggets.formats import (
    AssignedAnswer,
    CreatedNuggets,
    FileNugget,
    assignment_line,
    created_nuggets_text,
    parse_assignments,
    parse_created_nuggets,
)
from annotation.rag_nuggets.importance import importance_labels
from annotation.rag_nuggets.lists import (
    ASSIGNMENTS,
    IMPORTANCE,
    NUGGETS,
    assigned_list_owners,
    count_into,
    cover,
    importance_store,
    list_store,
    ordered_turns,
    set_order,
    turns_by_id,
)
from annotation.rag_nuggets.writer import (
    AssignmentRow,
    ImportanceRow,
    importance_judgments_upsert,
    nugget_assignments_upsert,
    nugget_list_replace,
)
from annotation.services import ImportResult
from core.ordering import natural_key


@transaction.atomic
def created_nuggets_import(*, path: str | Path, collection: Collection, judge: Judge) -> ImportResult:
    """Load nuggetizer's created nuggets as the judge's ordered nugget lists, and their vital/okay as the
    same judge's importance labels (condition imported).

    The judge's lists on the collection then equal the file: a question the file leaves out loses the
    judge's nuggets there. Nuggets are keyed "1".."n" in file order, so the same file twice changes
    nothing and a changed text keeps its labels.
    """
    pathname = str(path)
    problems = Problems(pathname)
    records = parse_created_nuggets(path, problems=problems)
    turns = turns_by_id(collection, {r.qid: r.line for r in records}, problems)
    problems.raise_if_any()
    result = ImportResult()
    rows: list[ImportanceRow] = []
    listed = [turns[r.qid] for r in records]
    for record in records:
        stored = list_store(
            judge=judge,
            turn=turns[record.qid],
            nuggets=record.nuggets,
            result=result,
            line=record.line,
            path=pathname,
        )
        rows += [ImportanceRow(n.pk, f.importance) for n, f in zip(stored, record.nuggets, strict=True)]
    left_out = Turn.objects.filter(nuggets__judge=judge, collection=collection).exclude(
        pk__in=[t.pk for t in listed]
    )
    for turn in left_out.distinct():
        written = nugget_list_replace(judge=judge, turn=turn, nuggets=[])
        count_into(result, NUGGETS, 0, 0, 0, written.removed)
    importance_store(judge=judge, collection=collection, rows=rows, result=result)
    set_order(judge, collection, listed)
    return result


def created_nuggets_export(
    *, collection: Collection, judge: Judge, importance_judge: Judge | None = None
) -> str:
    """The judge's nugget lists as nuggetizer's created-nuggets file. A nugget's importance is
    `importance_judge`'s vital/okay label of it (default: the judge's own); one without a label is written
    as okay, as nuggetizer's scores count any importance but "vital"."""
    turns = ordered_turns(collection, judge)
    nuggets: dict[int, list[tuple[int, str]]] = {}
    for pk, turn_id, text in Nugget.objects.filter(judge=judge, turn__collection=collection).values_list(
        "pk", "turn_id", "text"
    ):
        nuggets.setdefault(turn_id, []).append((pk, text))
    importance = importance_labels(
        collection=collection, judge=None, importance_judge=importance_judge, nuggets_judge=judge
    )
    records = [
        CreatedNuggets(
            qid=turn_id,
            query=question,
            nuggets=[FileNugget(text, importance.get(pk, "okay")) for pk, text in nuggets.get(pk_turn, [])],
        )
        for pk_turn, turn_id, question in turns
    ]
    return created_nuggets_text(records)


# --- Assignments ---------------------------------------------------------------------------------


def _skipped(record: AssignedAnswer) -> bool:
    """nuggetizer's record of a topic its run did not answer: an empty answer_text, every nugget
    not_support (its assignment step writes that, without asking the LLM, for a missing answer)."""
    return not record.answer_text.strip() and all(n.assignment == NuggetSupport.NONE for n in record.nuggets)


def _answers(
    collection: Collection, records: list[AssignedAnswer], problems: Problems
) -> dict[tuple[str, str], tuple[int, int]]:
    """{(run_id, qid): (response pk, turn pk)} of the file's answers among the collection's TREC RAG
    answers. Answers the collection lacks, and answers whose text is another, are problems, except
    nuggetizer's record of a topic a run of the collection skipped (`_skipped`): it stores nothing, since
    the scores count such a topic as 0 whatever is stored, and the export writes the record back."""
    found: dict[tuple[str, str], tuple[int, int, str]] = {}
    # The file's runs only: an evaluation comes a run's file at a time, and reading every run's answers to
    # the file's questions made each file of a 90-run track read the answers of all 90.
    for pk, turn_pk, run, qid, text in Response.objects.filter(
        run__collection=collection,
        run__name__in={r.run_id for r in records},
        turn__turn_id__in={r.qid for r in records},
        rank=1,
    ).values_list("pk", "turn_id", "run__name", "turn__turn_id", "text"):
        found[run, qid] = (pk, turn_pk, text)
    runs = set(
        Run.objects.filter(collection=collection, name__in={r.run_id for r in records}).values_list(
            "name", flat=True
        )
    )
    answers: dict[tuple[str, str], tuple[int, int]] = {}
    for r in records:
        hit = found.get((r.run_id, r.qid))
        if hit is None:
            if r.run_id in runs and _skipped(r):
                continue
            if r.run_id in runs and not r.answer_text.strip():
                problems.add(
                    r.line,
                    f"run {r.run_id} did not answer qid {r.qid}: its record must label every nugget "
                    "not_support, as nuggetizer writes it",
                )
            else:
                problems.add(r.line, f"run {r.run_id} has no answer to qid {r.qid} in {collection.name}")
        elif hit[2].split() != r.answer_text.split():
            problems.add(
                r.line, f"answer_text is not run {r.run_id}'s answer to qid {r.qid}: {excerpt(r.answer_text)}"
            )
        else:
            answers[r.run_id, r.qid] = hit[:2]
    return answers


class _Listed(NamedTuple):
    """A nugget of a stored list, as the matching reads it: a row each, not a model instance (a file of
    a TREC RAG track's topics matches against tens of thousands)."""

    pk: int
    text: str


def _match(
    stored: list[_Listed], nuggets: list[FileNugget], line: int, qid: str, owner: str, problems: Problems
) -> list[_Listed] | None:
    """The stored nugget of each file nugget, by text (a repeated text takes the next one of that text)."""
    unused = list(stored)
    matched: list[_Listed] = []
    for nugget in nuggets:
        hit = next((n for n in unused if n.text == nugget.text), None)
        if hit is None:
            listed = sum(n.text == nugget.text for n in stored)
            if listed:
                times = sum(n.text == nugget.text for n in nuggets)
                problems.add(
                    line,
                    f"nugget {excerpt(nugget.text)} is listed {times} times in this answer, but {owner}'s list "
                    f"for qid {qid} has it {'once' if listed == 1 else f'{listed} times'}: an answer labels each "
                    "nugget of the list once",
                )
            else:
                problems.add(
                    line, f"nugget {excerpt(nugget.text)} is not one of {owner}'s nuggets for qid {qid}"
                )
            return None
        unused.remove(hit)
        matched.append(hit)
    return matched


# Answers written per round: tens of nuggets each.
_ANSWERS_PER_WRITE = 500


@transaction.atomic
def assignments_import(
    *, path: str | Path, collection: Collection, judge: Judge, nuggets_judge: Judge | None = None
) -> ImportResult:
    """Load nuggetizer's assignments of answers as the judge's nugget assignments (condition imported).

    Answers are found by (run_id, qid) among the collection's TREC RAG answers; nuggetizer's record of a
    topic a run skipped stores nothing (see `_answers`). Nuggets are matched by text within the qid
    against `nuggets_judge`'s list (default: the assignment judge's own), an empty list included; where
    the assignment judge has no list for a qid yet, it is created from the file, in the first answer's
    order. The file's vital/okay labels become the assignment judge's own importance labels, reported as
    such: the scores and exports count them by default for this judge's assignments, so an export gives
    back the file. Re-importing the same file changes nothing.
    """
    pathname = str(path)
    owner = nuggets_judge or judge
    problems = Problems(pathname)
    records = parse_assignments(path, problems=problems)
    turns = turns_by_id(collection, {r.qid: r.line for r in reversed(records)}, problems)
    answers = _answers(collection, records, problems)
    stored: dict[int, list[_Listed]] = {
        turn_pk: []
        for turn_pk in NuggetSetTurn.objects.filter(
            judge=owner, turn__in=[t.pk for t in turns.values()]
        ).values_list("turn_id", flat=True)
    }
    # In list order (the model's ordering).
    for pk, turn_pk, text in Nugget.objects.filter(
        judge=owner, turn__in=[t.pk for t in turns.values()]
    ).values_list("pk", "turn_id", "text"):
        stored.setdefault(turn_pk, []).append(_Listed(pk, text))
    firsts: dict[str, AssignedAnswer] = {}
    matched: dict[int, list[_Listed] | None] = {}
    for index, r in enumerate(records):
        if r.qid not in turns:
            continue
        if turns[r.qid].pk in stored:
            matched[index] = _match(stored[turns[r.qid].pk], r.nuggets, r.line, r.qid, owner.name, problems)
        elif owner != judge:
            problems.add(r.line, f"{owner.name} has no nuggets for qid {r.qid}")
        else:
            first = firsts.setdefault(r.qid, r)
            if [(n.text, n.importance) for n in r.nuggets] != [(n.text, n.importance) for n in first.nuggets]:
                problems.add(
                    r.line, f"the nuggets of qid {r.qid} (texts or vital/okay) differ from line {first.line}"
                )
    importance: dict[int, str] = {}
    for index, nuggets in matched.items():
        for nugget, item in zip(nuggets or [], records[index].nuggets, strict=False):
            if importance.setdefault(nugget.pk, item.importance) != item.importance:
                problems.add(
                    records[index].line,
                    f"nugget {excerpt(item.text)} is {item.importance} on this line, "
                    f"{importance[nugget.pk]} on another",
                )
    problems.raise_if_any()

    result = ImportResult()
    for qid, first in firsts.items():
        created = [
            _Listed(n.pk, n.text)
            for n in list_store(
                judge=judge,
                turn=turns[qid],
                nuggets=first.nuggets,
                result=result,
                line=first.line,
                path=pathname,
            )
        ]
        for index, r in enumerate(records):
            if r.qid == qid:
                matched[index] = created
                importance.update({n.pk: f.importance for n, f in zip(created, r.nuggets, strict=True)})
    if firsts:
        cover(judge, collection, [turns[qid] for qid in firsts])
    # A block of answers at a time through the writer, which reads the stored labels of those answers only:
    # an evaluation's 810,000 labels never become 810,000 rows and model instances at once.
    stored_answers = [index for index, r in enumerate(records) if (r.run_id, r.qid) in answers]
    written = Written()
    try:
        for start in range(0, len(stored_answers), _ANSWERS_PER_WRITE):
            done = nugget_assignments_upsert(
                judge=judge,
                collection=collection,
                rows=[
                    AssignmentRow(
                        answers[records[index].run_id, records[index].qid][0], nugget.pk, item.assignment
                    )
                    for index in stored_answers[start : start + _ANSWERS_PER_WRITE]
                    for nugget, item in zip(matched[index] or [], records[index].nuggets, strict=True)
                ],
                condition=Condition.IMPORTED,
            )
            written.created += done.created
            written.updated += done.updated
            written.unchanged += done.unchanged
    except JudgmentRefused as exc:
        raise ImportFailed([f"{pathname}: {exc}"]) from None
    count_into(result, ASSIGNMENTS, written.created, written.updated, written.unchanged, 0)
    # Named in the report: these labels are an importance judge of their own (the assignment judge),
    # which the scores of its assignments use by default and --importance-judge can name for others.
    labelled = importance_judgments_upsert(
        judge=judge,
        collection=collection,
        rows=[ImportanceRow(k, v) for k, v in importance.items()],
        condition=Condition.IMPORTED,
    )
    count_into(
        result,
        f"{IMPORTANCE} of {judge.name}",
        labelled.created,
        labelled.updated,
        labelled.unchanged,
        0,
    )
    return result


def _covered(collection: Collection, owners: set[int]) -> list[tuple[int, str, str]]:
    """(turn pk, turn id, question) of the turns the owners' nugget sets cover, in set order."""
    rows: dict[int, tuple[int, str, str]] = {}
    for owner in Judge.objects.filter(pk__in=owners).order_by("name"):
        for row in ordered_turns(collection, owner):
            rows.setdefault(row[0], row)
    return list(rows.values())


# An answer of a nuggetizer assignments file, read from its response.
ANSWER_COLUMNS = (
    "pk",
    "run_id",
    "run__name",
    "turn_id",
    "turn__turn_id",
    "turn__utterance",
    "text",
    "response_length",
)


def assignments_export(
    *,
    collection: Collection,
    judge: Judge,
    nuggets_judge: Judge | None = None,
    importance_judge: Judge | None = None,
    answered_only: bool = False,
) -> Iterator[str]:
    """The judge's nugget assignments as nuggetizer's assignments file, a line at a time: an answer a line,
    runs by name and questions in the nugget set's order, each answer's nuggets in list order.

    As nuggetizer's pipeline writes it, every run the judge assigned nuggets to has a line for every
    question the evaluation covers (one the judge labelled an answer of, or whose list is empty): an answer
    to an empty list has `"nuggets": []`, an answer without labels too, and a question the run did not
    answer gets nuggetizer's record of it (answer_text "", response_length 0, every nugget not_support). `answered_only` writes only the answers with labels.
    A nugget's importance follows `annotation.rag_nuggets.importance` (default: the assignment judge's own
    label, else its own judge's; okay without one). `answer_text` is the answer's sentences joined by a
    space, as nuggetizer joins them; `response_length` is the one the answer file gave, else the answer's
    number of words.

    The nuggets and their importance are read once (tens per question); the labels, answers and sentences
    a run at a time, so the memory is one run's, not the evaluation's (800,000 labels at TREC RAG's size).
    """
    rows = NuggetAssignment.objects.filter(judge=judge, response__run__collection=collection)
    if nuggets_judge is not None:
        rows = rows.filter(nugget__judge=nuggets_judge)
    owners = (
        {nuggets_judge.pk}
        if nuggets_judge is not None
        else set(assigned_list_owners(collection=collection, judge=judge).values_list("pk", flat=True))
    )
    importance = importance_labels(
        collection=collection, judge=judge, importance_judge=importance_judge, nuggets_judge=nuggets_judge
    )
    # (run pk, run, turn pk) of every labelled answer: the runs written, and the questions covered.
    labelled = set(
        rows.order_by().values_list("response__run_id", "response__run__name", "response__turn_id").distinct()
    )
    runs = sorted({(run_pk, run) for run_pk, run, _ in labelled}, key=lambda r: r[1])
    labelled_turns = {turn_pk for _, _, turn_pk in labelled}
    # The questions the evaluation covers, as nugget_scores counts them: those with a labelled answer, and
    # those whose list is empty.
    owned = set(
        Nugget.objects.filter(judge_id__in=owners, turn__collection=collection).values_list(
            "turn_id", flat=True
        )
    )
    topics = [t for t in _covered(collection, owners) if t[0] in labelled_turns or t[0] not in owned]
    by_turn: dict[int, list[tuple[int, str, str]]] = {}
    for pk, turn_pk, text in Nugget.objects.filter(
        judge_id__in=owners, turn__collection=collection
    ).values_list("pk", "turn_id", "text"):  # in list order (the model's ordering)
        by_turn.setdefault(turn_pk, []).append((pk, text, importance.get(pk, "okay")))
    place = {pk: i for i, (pk, _, _) in enumerate(topics)}
    for run_pk, run in runs:
        yield from _run_lines(
            rows.filter(response__run_id=run_pk), run_pk, run, topics, place, by_turn, answered_only
        )


# (response pk, or None for a question the run did not answer; run pk, run, turn pk, qid, question, text,
# response_length), as ANSWER_COLUMNS reads them
Answer = tuple[int | None, int, str, int, str, str, str, int | None]


def _run_lines(
    rows: QuerySet[NuggetAssignment],
    run_pk: int,
    run: str,
    topics: list[tuple[int, str, str]],
    place: dict[int, int],
    by_turn: dict[int, list[tuple[int, str, str]]],
    answered_only: bool,
) -> Iterator[str]:
    """One run's lines of the assignments file (see `assignments_export`)."""
    labels: dict[int, dict[int, str]] = {}
    for response_pk, nugget_pk, label in rows.order_by().values_list("response_id", "nugget_id", "label"):
        labels.setdefault(response_pk, {})[nugget_pk] = label
    answers: list[Answer]
    if answered_only:
        answers = list(Response.objects.filter(pk__in=list(labels)).values_list(*ANSWER_COLUMNS))
    else:
        answers = list(
            Response.objects.filter(run_id=run_pk, turn_id__in=[t[0] for t in topics], rank=1)
            .order_by()
            .values_list(*ANSWER_COLUMNS)
        )
        given = {turn_pk for _, _, _, turn_pk, *_ in answers}
        answers += [
            (None, run_pk, run, turn_pk, qid, question, "", 0)
            for turn_pk, qid, question in topics
            if turn_pk not in given
        ]
    answers.sort(key=lambda a: (place.get(a[3], len(place)), natural_key(a[4])))
    # nuggetizer joins the answer's sentences as the answer file gives them; the stored answer text has
    # them stripped first, so it is only the fallback for an answer without sentences.
    sentences: dict[int, list[str]] = {}
    # In each answer's order; not the model's ordering, which joins the run, turn and collection to sort.
    for response_pk, sentence in (
        ResponseSentence.objects.filter(response__in=[a[0] for a in answers if a[0] is not None])
        .order_by("response_id", "index")
        .values_list("response_id", "text")
    ):
        sentences.setdefault(response_pk, []).append(sentence)
    for answer_pk, _run_pk, _run, turn_pk, qid, question, text, length in answers:
        if answer_pk is None:  # nuggetizer's record of a question the run did not answer
            nuggets = [
                FileNugget(t, vital, NuggetSupport.NONE.value) for _, t, vital in by_turn.get(turn_pk, [])
            ]
        else:
            mine = labels.get(answer_pk, {})
            nuggets = [FileNugget(t, vital, mine[n]) for n, t, vital in by_turn.get(turn_pk, []) if n in mine]
        yield assignment_line(
            AssignedAnswer(
                qid=qid,
                query=question,
                run_id=run,
                answer_text=" ".join(sentences[answer_pk]) if answer_pk in sentences else text,
                response_length=len(text.split()) if length is None else length,
                nuggets=nuggets,
            )
        )


# --- The console's upload and download ------------------------------------------------------------


def created_nuggets_upload(upload: Upload) -> ImportResult:
    return created_nuggets_import(path=upload.path, collection=upload.collection, judge=upload.judge())


def assignments_upload(upload: Upload) -> ImportResult:
    """The checks of `import_nugget_assignments`, then its service."""
    options = upload.options
    owner = judge_named(options["nugget_judge"]) if options.get("nugget_judge") else None
    if owner is not None and owner.name == options["judge"]:
        raise UploadRefused("the nugget judge is the judge itself: leave it empty")
    return assignments_import(
        path=upload.path, collection=upload.collection, judge=upload.judge(), nuggets_judge=owner
    )
