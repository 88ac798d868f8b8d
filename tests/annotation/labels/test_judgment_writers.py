"""The one writer per judgment type: its scale checks, what a revision replaces, how time adds up, and
an architecture check that no other module creates, updates or saves judgment rows behind the writers'
backs."""

import ast
import re
from pathlib import Path

import pytest
from django.apps import apps

from annotation.labels.writer import JudgmentRefused
from annotation.models import (
    Condition,
    GoldResponse,
    NtnJudgment,
    NtrJudgment,
    Nugget,
    PtkbJudgment,
    RelevanceJudgment,
    SupportJudgment,
)
from annotation.nuggets.writer import (
    NtnRow,
    NtrRow,
    gold_response_submit,
    ntn_judgments_store,
    ntr_judgment_submit,
    ntr_judgments_upsert,
    nugget_upsert,
)
from annotation.ptkb.writer import PtkbRow, ptkb_judgments_upsert
from annotation.relevance.writer import RelevanceRow, relevance_judgments_upsert
from annotation.support import writer as support_writer
from annotation.support.writer import (
    MachineSupportLabel,
    SupportRow,
    support_judgment_submit,
    support_judgments_upsert,
    support_machine_labels_submit,
)
from tests.factories import (
    NuggetFactory,
    PtkbStatementFactory,
    ResponseFactory,
    ResponseSentenceFactory,
    TurnFactory,
)

REPO = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.django_db


@pytest.fixture
def turn():
    return TurnFactory()


# --- Nuggets and gold responses ----------------------------------------------------------------------


def test_a_nugget_revision_replaces_its_span_and_adds_up_its_time(judge, turn):
    first, outcome = nugget_upsert(
        judge=judge, turn=turn, key="[1]", text="alpha", passage_id="d:0", start=0, end=5, time_spent_ms=300
    )
    assert outcome == "created"
    again, outcome = nugget_upsert(
        judge=judge, turn=turn, key="[1]", text="alph", passage_id="d:0", start=0, end=4, time_spent_ms=200
    )
    assert outcome == "updated"
    assert again.pk == first.pk
    stored = Nugget.objects.get(pk=first.pk)
    assert (stored.text, stored.start, stored.end, stored.time_spent_ms) == ("alph", 0, 4, 500)
    assert Nugget.objects.filter(judge=judge, turn=turn).count() == 1


def test_the_same_nugget_twice_changes_nothing(judge, turn):
    nugget_upsert(judge=judge, turn=turn, key="[1]", text="alpha")
    _, outcome = nugget_upsert(judge=judge, turn=turn, key="[1]", text="alpha")
    assert outcome == "unchanged"


@pytest.mark.parametrize(
    ("text", "start", "end", "reason"),
    [
        ("  ", None, None, "needs text"),
        ("a", 3, None, "both"),
        ("a", 5, 5, "not a span"),
        ("a", -1, 2, "not"),
    ],
)
def test_it_refuses_a_nugget_that_is_no_span(judge, turn, text, start, end, reason):
    with pytest.raises(JudgmentRefused, match=reason):
        nugget_upsert(judge=judge, turn=turn, key="[1]", text=text, start=start, end=end)
    assert not Nugget.objects.exists()


def test_a_gold_response_revision_replaces_text_and_nuggets_and_adds_up_time(judge, turn):
    a, b = NuggetFactory(turn=turn), NuggetFactory(turn=turn)
    response, outcome = gold_response_submit(
        judge=judge, turn=turn, text="one", nuggets=[a], time_spent_ms=10
    )
    assert outcome == "created"
    _, outcome = gold_response_submit(
        judge=judge, turn=turn, text="two", nuggets=[b], is_draft=False, time_spent_ms=5
    )
    assert outcome == "updated"
    stored = GoldResponse.objects.get(pk=response.pk)
    assert (stored.text, stored.is_draft, stored.time_spent_ms) == ("two", False, 15)
    assert list(stored.nuggets.all()) == [b]
    _, outcome = gold_response_submit(judge=judge, turn=turn, text="two", nuggets=[b], is_draft=False)
    assert outcome == "unchanged"


def test_a_gold_response_uses_only_nuggets_of_its_turn(judge, turn):
    other = NuggetFactory()
    with pytest.raises(JudgmentRefused, match="is not a nugget of turn"):
        gold_response_submit(judge=judge, turn=turn, text="x", nuggets=[other])
    assert not GoldResponse.objects.exists()


# --- NtR and NtN -------------------------------------------------------------------------------------


def test_an_ntr_revision_replaces_the_verdict_and_adds_up_time(judge, turn):
    response, nugget = ResponseFactory(turn=turn), NuggetFactory(turn=turn)
    ntr_judgment_submit(judge=judge, response=response, nugget=nugget, matched=True, time_spent_ms=40)
    ntr_judgment_submit(judge=judge, response=response, nugget=nugget, matched=False, time_spent_ms=2)
    stored = NtrJudgment.objects.get(judge=judge)
    assert (stored.matched, stored.time_spent_ms) == (False, 42)


def test_ntr_refuses_a_nugget_of_another_turn(judge, turn):
    response, nugget = ResponseFactory(turn=turn), NuggetFactory()
    with pytest.raises(JudgmentRefused, match="not a nugget of the response's turn"):
        ntr_judgment_submit(judge=judge, response=response, nugget=nugget, matched=True)
    with pytest.raises(JudgmentRefused, match="not a nugget of response"):
        ntr_judgments_upsert(judge=judge, rows=[NtrRow(response.pk, nugget.pk, True)])
    assert not NtrJudgment.objects.exists()


def test_bulk_ntr_restates_the_source_so_a_second_sync_changes_nothing(judge, turn):
    response = ResponseFactory(turn=turn)
    a, b, c = (NuggetFactory(turn=turn) for _ in range(3))
    rows = [NtrRow(response.pk, a.pk, True, 100), NtrRow(response.pk, b.pk, False)]
    first = ntr_judgments_upsert(judge=judge, rows=rows)
    assert (first.created, first.updated, first.unchanged) == (2, 0, 0)
    again = ntr_judgments_upsert(judge=judge, rows=rows)
    assert (again.created, again.updated, again.unchanged) == (0, 0, 2)
    # The time a source states replaces the stored one: the same assignment synced twice counts once.
    assert NtrJudgment.objects.get(nugget=a).time_spent_ms == 100
    ntr_judgment_submit(judge=judge, response=response, nugget=c, matched=True)
    changed = ntr_judgments_upsert(
        judge=judge, rows=[NtrRow(response.pk, a.pk, False, 100)], remove=[(response.pk, c.pk)]
    )
    assert (changed.updated, changed.removed) == (1, 1)
    assert dict(NtrJudgment.objects.values_list("nugget_id", "matched")) == {a.pk: False, b.pk: False}


def test_ntn_keeps_a_verdict_stored_meanwhile_and_refuses_a_score_outside_0_1(judge, turn):
    premise, gold = NuggetFactory(turn=turn), NuggetFactory(turn=turn)
    ntn_judgments_store(judge=judge, rows=[NtnRow(premise.pk, gold.pk, True, 0.9)])
    ntn_judgments_store(judge=judge, rows=[NtnRow(premise.pk, gold.pk, False, 0.1)])
    assert list(NtnJudgment.objects.values_list("entails", "score")) == [(True, 0.9)]
    with pytest.raises(JudgmentRefused, match="probability"):
        ntn_judgments_store(judge=judge, rows=[NtnRow(gold.pk, premise.pk, True, 1.5)])
    assert NtnJudgment.objects.count() == 1


# --- Support ------------------------------------------------------------------------------------------


@pytest.fixture
def sentence():
    return ResponseSentenceFactory(citations=["p1", "p2"])


def test_a_support_revision_replaces_the_label_keeps_what_was_shown_and_adds_up_time(judge, sentence):
    support_judgment_submit(
        judge=judge,
        sentence=sentence,
        citation_index=1,
        label="PS",
        condition=Condition.POST_EDIT,
        shown_label="PS",
        time_spent_ms=1000,
    )
    stored = SupportJudgment.objects.get(judge=judge)
    assert (stored.passage_id, stored.changed) == ("p2", False)
    support_judgment_submit(
        judge=judge,
        sentence=sentence,
        citation_index=1,
        label="FS",
        condition=Condition.POST_EDIT,
        time_spent_ms=500,
    )
    stored.refresh_from_db()
    assert (stored.label, stored.shown_label, stored.changed, stored.time_spent_ms) == (
        "FS",
        "PS",
        True,
        1500,
    )


def test_support_refuses_a_label_off_the_scale_a_missing_citation_and_a_second_condition(judge, sentence):
    scratch = Condition.SCRATCH
    with pytest.raises(JudgmentRefused, match="label must be one of FS, PS, NS"):
        support_judgment_submit(
            judge=judge, sentence=sentence, citation_index=0, label="YES", condition=scratch
        )
    with pytest.raises(JudgmentRefused, match="no citation 2"):
        support_judgment_submit(
            judge=judge, sentence=sentence, citation_index=2, label="FS", condition=scratch
        )
    support_judgment_submit(judge=judge, sentence=sentence, citation_index=0, label="FS", condition=scratch)
    with pytest.raises(JudgmentRefused, match="never judges a unit in two conditions"):
        support_judgment_submit(
            judge=judge,
            sentence=sentence,
            citation_index=0,
            label="NS",
            condition=Condition.POST_EDIT,
        )
    assert list(SupportJudgment.objects.values_list("label", "condition")) == [("FS", scratch)]


def test_bulk_support_is_idempotent_and_checks_the_scale(judge):
    sentence = ResponseSentenceFactory(citations=["p1"])
    machine = Condition.MACHINE
    rows = [SupportRow(sentence.pk, 0, "p1", "NS")]
    assert support_judgments_upsert(judge=judge, rows=rows, condition=machine).created == 1
    again = support_judgments_upsert(judge=judge, rows=rows, condition=machine)
    assert (again.created, again.updated, again.unchanged) == (0, 0, 1)
    revised = [SupportRow(sentence.pk, 0, "p1", "FS")]
    assert support_judgments_upsert(judge=judge, rows=revised, condition=machine).updated == 1
    with pytest.raises(JudgmentRefused, match="label must be one of"):
        support_judgments_upsert(
            judge=judge, rows=[SupportRow(sentence.pk, 0, "p1", "full")], condition=machine
        )
    assert list(SupportJudgment.objects.values_list("label", flat=True)) == ["FS"]


def test_bulk_support_counts_new_changed_and_unchanged_units_across_blocks(judge, monkeypatch):
    monkeypatch.setattr(support_writer, "_BLOCK", 2)
    sentences = ResponseSentenceFactory.create_batch(5, citations=["p1", "p2"])
    first = [SupportRow(s.pk, 0, "p1", "NS") for s in sentences[:3]]
    support_judgments_upsert(judge=judge, rows=first, condition=Condition.IMPORTED)
    before = SupportJudgment.objects.get(sentence=sentences[0]).updated_at

    mixed = [SupportRow(s.pk, 0, "p1", "NS") for s in sentences[:2]]  # as stored
    mixed += [SupportRow(sentences[2].pk, 0, "p1", "PS")]  # revised
    mixed += [SupportRow(s.pk, 1, "p2", "FS") for s in sentences[3:]]  # new
    written = support_judgments_upsert(judge=judge, rows=mixed, condition=Condition.IMPORTED)

    assert (written.created, written.updated, written.unchanged) == (2, 1, 2)
    assert SupportJudgment.objects.get(sentence=sentences[0]).updated_at == before  # not written again
    assert sorted(SupportJudgment.objects.values_list("citation_index", "passage_id", "label")) == [
        (0, "p1", "NS"),
        (0, "p1", "NS"),
        (0, "p1", "PS"),
        (1, "p2", "FS"),
        (1, "p2", "FS"),
    ]


def test_a_machine_support_label_is_of_the_first_citation_in_the_machine_condition(judge):
    sentence = ResponseSentenceFactory(citations=["p1", "p2"])
    labels = [MachineSupportLabel(sentence_id=sentence.pk, passage_id="p1", label="PS")]
    assert support_machine_labels_submit(judge=judge, labels=labels).created == 1
    stored = SupportJudgment.objects.get(judge=judge)
    assert (stored.citation_index, stored.passage_id, stored.label, stored.condition) == (
        0,
        "p1",
        "PS",
        Condition.MACHINE,
    )
    assert (stored.shown_label, stored.changed, stored.time_spent_ms) == ("", None, None)


# --- Architecture -------------------------------------------------------------------------------------

JUDGMENT_MODELS = (
    "RelevanceJudgment",
    "PtkbJudgment",
    "Nugget",
    "GoldResponse",
    "NtrJudgment",
    "NtnJudgment",
    "SupportJudgment",
    "NuggetImportanceJudgment",
    "NuggetAssignment",
)
# Writes through a manager or queryset: a chain `Model.objects....<method>(` or, through a relation,
# `<anything>.<related name>....<method>(` (judge.nuggets.update(...)), however many lines it spans.
WRITE_METHODS = {"create", "get_or_create", "update_or_create", "bulk_create", "update", "bulk_update"}
# ...and `x.save(` where x is a judgment row: a name annotated as one of the models, or bound (assigned,
# or looped over) to an expression that names one of them.
SAVE_METHODS = {"save"}


def _related_names() -> set[str]:
    """The names under which other rows reach judgment rows (judge.nuggets, turn.relevance_judgments)."""
    models = [apps.get_model("annotation", name) for name in JUDGMENT_MODELS]
    return {
        relation.get_accessor_name()
        for model in models
        for relation in model._meta.related_objects
        if relation.related_model in models or relation.model in models
    } | {
        field.remote_field.get_accessor_name()
        for model in models
        for field in model._meta.get_fields()
        if field.is_relation and field.concrete and field.remote_field is not None
    } - {None}


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
    }


def _chain_root(node: ast.AST) -> tuple[ast.AST, list[str]]:
    """The start of a call chain and the attribute names along it: a.b(...).c -> (a, [b, c])."""
    attrs: list[str] = []
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript):
            node = node.value
        else:
            return node, attrs[::-1]


def judgment_writes(source: str, related: set[str]) -> list[int]:
    """Lines of `source` that write judgment rows: create, update or save them."""
    tree = ast.parse(source)
    rows: set[str] = set()
    for node in ast.walk(tree):
        # Names that hold judgment rows: annotated as a model, or bound to an expression naming one.
        if isinstance(node, ast.arg | ast.AnnAssign) and node.annotation is not None:
            target = node.arg if isinstance(node, ast.arg) else getattr(node.target, "id", None)
            if target and _names_in(node.annotation) & set(JUDGMENT_MODELS):
                rows.add(target)
        elif isinstance(node, ast.Assign | ast.For | ast.comprehension):
            value = node.value if isinstance(node, ast.Assign) else node.iter
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if _names_in(value) & (set(JUDGMENT_MODELS) | related):
                rows |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    lines = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        method = node.func.attr
        root, attrs = _chain_root(node.func.value)
        if method in WRITE_METHODS:
            by_model = isinstance(root, ast.Name) and root.id in JUDGMENT_MODELS and attrs[:1] == ["objects"]
            if by_model or set(attrs) & related or (isinstance(root, ast.Name) and root.id in rows and attrs):
                lines.append(node.lineno)
        elif method in SAVE_METHODS and isinstance(root, ast.Name) and root.id in rows and not attrs:
            lines.append(node.lineno)
    return sorted(set(lines))


PRODUCT_PACKAGES = ("core", "annotation", "crowd", "judging", "devtools", "assay")
# Each label family writes its rows in its own package's writer module (annotation/<family>/writer.py);
# annotation/labels/writer.py holds what the families' writers share.
SHARED_WRITER = REPO / "annotation" / "labels" / "writer.py"


def _is_writer(path: Path) -> bool:
    return path.name == "writer.py" and path.parent.parent == REPO / "annotation"


def _product_sources():
    for package in PRODUCT_PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def test_bulk_relevance_restates_the_file_and_refuses_grades_off_the_scale(judge, turn):
    collection = turn.collection
    rows = [RelevanceRow(turn.pk, "p1", 2), RelevanceRow(turn.pk, "p2", 0)]
    first = relevance_judgments_upsert(judge=judge, collection=collection, rows=rows)
    again = relevance_judgments_upsert(judge=judge, collection=collection, rows=rows)
    assert (first.created, again.created, again.updated, again.unchanged) == (2, 0, 0, 2)
    revised = relevance_judgments_upsert(
        judge=judge, collection=collection, rows=[RelevanceRow(turn.pk, "p1", 4)], replace=True
    )
    assert (revised.updated, revised.removed) == (1, 1)
    assert dict(RelevanceJudgment.objects.filter(judge=judge).values_list("passage_id", "grade")) == {"p1": 4}
    with pytest.raises(JudgmentRefused, match="outside the scale"):
        relevance_judgments_upsert(judge=judge, collection=collection, rows=[RelevanceRow(turn.pk, "p3", 5)])
    assert not RelevanceJudgment.objects.filter(passage_id="p3").exists()


def test_bulk_ptkb_restates_the_file(judge, turn):
    statement = PtkbStatementFactory(topic=turn.topic)
    rows = [PtkbRow(turn.pk, statement.pk, True)]
    assert ptkb_judgments_upsert(judge=judge, collection=turn.collection, rows=rows).created == 1
    assert ptkb_judgments_upsert(judge=judge, collection=turn.collection, rows=rows).unchanged == 1
    flipped = ptkb_judgments_upsert(
        judge=judge, collection=turn.collection, rows=[PtkbRow(turn.pk, statement.pk, False)]
    )
    assert flipped.updated == 1
    assert PtkbJudgment.objects.get(judge=judge).relevant is False


def test_judgment_rows_are_written_only_by_the_writers():
    related = _related_names()
    offenders = [
        f"{path.relative_to(REPO)}:{number}: {source.splitlines()[number - 1].strip()}"
        for path in _product_sources()
        if not _is_writer(path)
        for source in [path.read_text(encoding="utf-8")]
        for number in judgment_writes(source, related)
    ]
    assert offenders == [], "write judgment rows through annotation/<family>/writer.py:\n" + "\n".join(
        offenders
    )


def test_the_writers_package_is_where_judgment_rows_are_written():
    related = _related_names()
    writers = [path for path in _product_sources() if _is_writer(path) and path != SHARED_WRITER]
    assert {path.parent.name for path in writers} >= {
        "relevance",
        "ptkb",
        "nuggets",
        "support",
        "rag_nuggets",
    }
    # Each writer module writes rows itself, or through the label helpers of labels/writer.py (which name the
    # model they write as an argument, out of the check's sight).
    generic = re.compile(r"\b(labelled_submit|labels_restate)\(\s*(\w+)")
    for path in writers:
        source = path.read_text(encoding="utf-8")
        through_base = {match.group(2) for match in generic.finditer(source)}
        # Relevance's writer writes its rows in one SQL statement (relevance_upsert_sql), which the
        # assessor's grade statement embeds.
        by_sql = re.search(r"\bINSERT INTO\b", source) is not None
        assert (
            judgment_writes(source, related)
            or through_base <= set(JUDGMENT_MODELS)
            and through_base
            or by_sql
        ), str(path.relative_to(REPO))


@pytest.mark.parametrize(
    "source",
    [
        "NtrJudgment.objects.bulk_create(created)",
        "SupportJudgment.objects.select_for_update().get_or_create(judge=j)",
        "Nugget.objects.filter(\n    duplicate_of=n,\n).update(duplicate_of=root)",
        "Nugget.objects.bulk_update(nuggets, ['duplicate_of'])",
        "judge.nuggets.filter(turn=t).update(text='x')",
        "def f(nugget: Nugget):\n    nugget.save(update_fields=['text'])",
        "for n in Nugget.objects.filter(judge=j):\n    n.save()",
        "current = RelevanceJudgment.objects.get(pk=1)\ncurrent.grade = 3\ncurrent.save()",
    ],
)
def test_the_architecture_check_sees_a_write(source):
    assert judgment_writes(source, _related_names())


@pytest.mark.parametrize(
    "source",
    [
        "NtrJudgment.objects.filter(judge=j).delete()",
        "Passage.objects.bulk_update(rows, ['text'])",
        "def f(slot: WorkSlot):\n    slot.save()",
        "counts = {}\ncounts.update(RelevanceJudgment.objects.values('grade'))",
    ],
)
def test_the_architecture_check_lets_other_writes_and_reads_pass(source):
    assert judgment_writes(source, _related_names()) == []
