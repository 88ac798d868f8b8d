"""The relevance work rules, which run as grade_sql's prepared statements, answer and store as the rules say.

Scripted sequences of the assessor page's and scripts' requests (next, grade with and without next, the
page's form, a skip, a regrade, another assessor, bad input, a passage without text, a lease that runs
out and is taken over, the unit's end, the PTKB step, several assessors grading at the same instant)
run against a campaign; every answer, every stored judgment and every copy's state is checked. (These
answers were first pinned by running the same scripts through an ORM form of the rules, now gone.)
"""

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from annotation.models import (
    Passage,
    PoolEntry,
    PtkbJudgment,
    PtkbStatement,
    RelevanceJudgment,
    Turn,
    WorkSlot,
)
from annotation.relevance import grade_sql
from tests.concurrency import at_the_same_instant
from tests.factories import TopicFactory, UserFactory, relevance_campaign

pytestmark = [pytest.mark.django_db]


class Campaign:
    """One copy of the campaign, and the names its ids get so that two copies compare."""

    def __init__(self) -> None:
        self.alice, self.bob, self.carol = UserFactory(), UserFactory(), UserFactory()
        self.names = {self.alice.pk: "alice", self.bob.pk: "bob", self.carol.pk: "carol"}
        self.assignment = relevance_campaign(
            assessors=[self.alice, self.bob],
            n_turns=2,
            n_passages=3,
            n_ptkb=0,
            unit_kind="conversation",
        )
        self.entries = list(
            PoolEntry.objects.filter(pool=self.assignment.pool)
            .select_related("turn")
            .order_by("turn__position", "order")
        )
        self.passage = {(e.turn.position, e.order): e for e in self.entries}
        self.canonical = {(e.turn_id, e.passage_id): f"t{e.turn.position}.p{e.order}" for e in self.entries}
        # The collection lacks the text of one pooled passage.
        missing = self.passage[(2, 1)]
        Passage.objects.filter(
            collection=self.assignment.pool.collection, passage_id=missing.passage_id
        ).delete()
        self.clients = {}
        for user in (self.alice, self.bob, self.carol):
            client = Client()
            client.force_login(user)
            self.clients[self.names[user.pk]] = client
        self.slot_pk = 0

    def next(self, who: str):
        response = self.clients[who].post(
            reverse("relevance-api-next", args=[self.assignment.pk]), content_type="application/json"
        )
        if response.status_code == 200:
            self.slot_pk = response.json()["slot"]
        return self._seen("next", who, response)

    def grade(
        self, who: str, where: tuple[int, int], grade, passage_id: str | None = None, then_next=True, key=None
    ):
        entry = self.passage[where]
        headers = {} if key is None else {"HTTP_IDEMPOTENCY_KEY": key}
        body = {
            "turn_pk": entry.turn_id,
            "passage_id": entry.passage_id if passage_id is None else passage_id,
            "grade": grade,
            "time_spent_ms": 100,
            "next": then_next,
        }
        response = self.clients[who].post(
            reverse("relevance-api-grade", args=[self.slot_pk]),
            body,
            content_type="application/json",
            **headers,
        )
        return self._seen("grade", who, response)

    def _passage(self, data: dict) -> dict:
        key = (data["turn_pk"], data["passage_id"])
        entry = next(e for e in self.entries if (e.turn_id, e.passage_id) == key)
        stored = Passage.objects.filter(
            collection=self.assignment.pool.collection, passage_id=entry.passage_id
        ).first()
        return {
            "passage": self.canonical[key],
            "slot": "the copy" if data["slot"] == self.slot_pk else data["slot"],
            "unit": data["unit"] == self.assignment.units.get().label,
            "turn_id": data["turn_id"] == entry.turn.turn_id,
            "index": data["index"],
            "title": "missing" if stored is None else data["title"] == stored.title,
            "text": "missing" if stored is None else data["text"] == stored.text,
            "empty when missing": stored is not None or (data["title"], data["text"]) == ("", ""),
            "url": data["url"]
            == reverse("relevance-passage", args=[data["slot"], entry.turn_id, entry.order]),
        }

    def _seen(self, call: str, who: str, response) -> tuple:
        data = response.json() if response.content else None
        if response.status_code == 200 and call == "next":
            data = self._passage(data)
        elif response.status_code == 201:
            data = {
                "graded": self.canonical[(data["turn_pk"], data["passage_id"])],
                "grade": data["grade"],
                "next": None if data.get("next") is None else self._passage(data["next"]),
                "unit_complete": data.get("unit_complete"),
            }
        elif response.status_code == 409:
            data = {
                **data,
                "slot": "the copy" if data["slot"] == self.slot_pk else data["slot"],
                "url": "page",
            }
        return (call, who, response.status_code, data)

    def page_grade(self, who: str, where: tuple[int, int], grade):
        entry = self.passage[where]
        url = reverse("relevance-passage", args=[self.slot_pk, entry.turn_id, entry.order])
        response = self.clients[who].post(url, {"grade": grade, "time_spent_ms": 100})
        return ("page", who, response.status_code, response.get("Location", "").count("/"))

    def expire_lease(self) -> None:
        WorkSlot.objects.filter(pk=self.slot_pk).update(leased_until=timezone.now() - timedelta(minutes=1))

    def lease_almost_out(self) -> None:
        almost = timezone.now() + timedelta(minutes=self.assignment.lease_minutes / 4)
        WorkSlot.objects.filter(pk=self.slot_pk).update(leased_until=almost)

    def state(self) -> dict:
        judgments = sorted(
            (self.names[j.judge.user_id], self.canonical[(j.turn_id, j.passage_id)], j.grade, j.time_spent_ms)
            for j in RelevanceJudgment.objects.filter(
                turn__topic__collection=self.assignment.pool.collection
            ).select_related("judge")
        )
        soon = timezone.now() + timedelta(minutes=self.assignment.lease_minutes * 0.9)
        slots = [
            (
                self.names.get(s.assessor_id),
                s.completed_at is not None,
                "fresh" if s.leased_until and s.leased_until > soon else "old",
            )
            for s in WorkSlot.objects.filter(assignment=self.assignment).order_by("position", "copy")
        ]
        return {"judgments": judgments, "slots": slots}


def _script(campaign: Campaign) -> list:
    seen = [campaign.next("alice")]
    seen.append(campaign.grade("alice", (1, 0), 2))
    seen.append(campaign.grade("alice", (1, 2), 1))  # a skip: the next is the one left behind
    seen.append(campaign.grade("alice", (1, 0), 4))  # a regrade
    seen.append(campaign.grade("bob", (1, 1), 3))  # another assessor of the assignment: not his copy
    seen.append(campaign.grade("carol", (1, 1), 3))  # not an assessor of it at all
    seen.append(campaign.grade("alice", (1, 1), 3, passage_id="not-pooled"))
    seen.append(campaign.grade("alice", (1, 1), 7))
    campaign.lease_almost_out()
    seen.append(campaign.grade("alice", (1, 1), 3))  # renews the lease; the next is in the other turn
    seen.append(campaign.grade("alice", (2, 0), 0))  # the next lacks its text
    seen.append(campaign.grade("alice", (1, 2), 2, then_next=False))  # a script's regrade: no next read
    state = campaign.state()
    campaign.expire_lease()
    seen.append(campaign.next("bob"))  # takes the copy over
    seen.append(campaign.grade("alice", (2, 1), 2))  # too late
    seen.append(campaign.grade("bob", (2, 1), 2))  # bob's first grade: his judge is made on the way
    for where in [(1, 0), (1, 1), (1, 2)]:
        seen.append(campaign.grade("bob", where, 3))
    seen.append(campaign.page_grade("bob", (2, 0), 3))  # the page's form, without JavaScript
    seen.append(campaign.grade("bob", (2, 2), 4))  # the last one: no next, the copy is closed
    seen.append(campaign.next("bob"))
    # A regrade retried with its key after its commit (its answer lost), then a retry saying otherwise.
    key = "0b9f2c1e-7a44-4c55-9d2e-3f1a6b8c0d21"
    seen.append(campaign.grade("bob", (1, 0), 1, key=key))
    seen.append(campaign.grade("bob", (1, 0), 1, key=key))
    seen.append(campaign.grade("bob", (1, 0), 2, key=key, then_next=False))
    seen.append(campaign.grade("bob", (1, 0), 0, key="not a key"))
    return [seen, state, campaign.state()]


def test_the_statements_answer_and_store_what_the_rules_say():
    with CaptureQueriesContext(connection) as queries:
        seen, midway, end = _script(Campaign())
    assert any("jsonb_array_elements_text" in q["sql"] for q in queries.captured_queries)
    upserts = sum(
        q["sql"].startswith('INSERT INTO "annotation_relevancejudgment"') for q in queries.captured_queries
    )
    assert [s[2] for s in seen[:13]] == [200, 201, 201, 201, 404, 404, 400, 400, 201, 201, 201, 200, 404]
    assert [s[2] for s in seen[13:]] == [201] * 4 + [302, 201, 204] + [201, 201, 201, 400]
    assert seen[-4][3] == seen[-3][3]  # the retry answers as the grade did
    assert seen[-2][3]["grade"] == 1
    assert seen[2][3]["next"]["passage"] == "t1.p1"
    assert seen[9][3]["next"]["text"] == "missing" and seen[9][3]["next"]["empty when missing"]
    assert seen[10][3]["next"] is None and seen[10][3]["unit_complete"] is None  # no next asked for
    assert seen[18][3]["next"] is None
    assert midway["slots"] == [("alice", False, "fresh")]
    assert end["slots"] == [("bob", True, "fresh")]
    assert ("alice", "t1.p0", 4, 200) in end["judgments"]  # the regrade: revised, its time added up
    assert ("alice", "t1.p2", 2, 200) in end["judgments"]
    assert ("bob", "t1.p0", 1, 200) in end["judgments"]  # the keyed regrade's time counted once
    assert len(end["judgments"]) == 4 + 6
    # The statements write every grade themselves (an assessor's first grade too: the judge is made, then
    # the statement runs again), never through a separate upsert.
    assert upserts == 0


@pytest.mark.django_db(transaction=True)
def test_the_statement_is_prepared_on_the_connection_that_runs_it_often():
    campaign = Campaign()
    campaign.next("alice")
    for where in [(1, 0), (1, 1), (1, 2), (2, 0), (2, 1), (2, 2)]:
        assert campaign.grade("alice", where, 2)[2] == 201

    # The test client's requests share this thread's connection: psycopg prepared the statement on it.
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [statement for (statement,) in cursor.fetchall()]

    assert any("jsonb_array_elements_text" in statement for statement in prepared)


def _loops_over(plan: dict, table: str) -> int:
    """How many times a plan (EXPLAIN ANALYZE's JSON) read `table`, over all its nodes."""
    own = plan["Actual Loops"] if plan.get("Relation Name") == table else 0
    return own + sum(_loops_over(child, table) for child in plan.get("Plans", []))


def _generic_plan_of_next(user_pk: int, assignment_pk: int) -> dict:
    """EXPLAIN ANALYZE's JSON plan of the next-passage statement as a generic plan (the kind psycopg's
    prepared statement runs on), for the user's open copy in the assignment."""
    names: list[str] = []

    def placeholder(match: re.Match) -> str:
        if match[1] not in names:
            names.append(match[1])
        return f"${names.index(match[1]) + 1}"

    statement = re.sub(r"%\((\w+)\)s", placeholder, grade_sql._next_statement("held"))
    params = {"user": user_pk, "assignment": assignment_pk, "token": "NULL", "password": "NULL"}
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        cursor.execute(f"PREPARE next_held AS {statement}")
        cursor.execute(
            f"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE next_held({', '.join(str(params[n]) for n in names)})"
        )
        (plan,) = cursor.fetchone()[0]
        cursor.execute("DEALLOCATE next_held")
    return plan["Plan"]


def test_the_next_passage_reads_the_judges_grades_once_per_turn_not_once_per_passage():
    # A generic plan prepared while the judgments table was small scans the table for each read of it
    # until the next ANALYZE: read once per passage walked, such a plan made each call as slow as the
    # table is large, so the walk reads the grades of each unit turn once.
    alice = UserFactory()
    assignment = relevance_campaign(
        assessors=[alice], n_turns=2, n_passages=10, n_ptkb=0, unit_kind="conversation"
    )
    client = Client()
    client.force_login(alice)
    step = client.post(reverse("relevance-api-next", args=[assignment.pk]), content_type="application/json")
    for _ in range(15):  # the first turn, and half of the second
        body = {"turn_pk": step.json()["turn_pk"], "passage_id": step.json()["passage_id"], "grade": 1}
        assert (
            client.post(reverse("relevance-api-grade", args=[step.json()["slot"]]), body).status_code == 201
        )
        step = client.post(
            reverse("relevance-api-next", args=[assignment.pk]), content_type="application/json"
        )

    plan = _generic_plan_of_next(alice.pk, assignment.pk)

    assert step.json()["index"] == 5  # the sixth passage of the second turn
    assert _loops_over(plan, RelevanceJudgment._meta.db_table) <= 2


def _reads_of(plan: dict, table: str) -> list[tuple[str, int]]:
    """Each node of a plan that reads `table`: its kind and the rows it returned over all its loops."""
    own = (
        [(plan["Node Type"], plan["Actual Rows"] * plan["Actual Loops"])]
        if plan.get("Relation Name") == table
        else []
    )
    return own + [read for child in plan.get("Plans", []) for read in _reads_of(child, table)]


def test_the_next_passage_looks_up_the_units_turns_by_key_not_the_whole_turns_table():
    # Joined as a set, the unit's turns made the planner hash the whole turns table on every call (its
    # guess for a JSON array is a hundred elements): a cost that grew with the collection.
    alice = UserFactory()
    assignment = relevance_campaign(assessors=[alice], n_turns=1, n_passages=2, n_ptkb=0)
    # The rest of a collection of real size: turns of other conversations, many pages of the table.
    other = TopicFactory(collection=assignment.pool.collection)
    Turn.objects.bulk_create(
        Turn(collection=other.collection, topic=other, turn_id=f"other_{i}", position=i, utterance="?")
        for i in range(1, 3001)
    )
    client = Client()
    client.force_login(alice)
    step = client.post(reverse("relevance-api-next", args=[assignment.pk]), content_type="application/json")
    assert step.status_code == 200
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Turn._meta.db_table}")

    reads = _reads_of(_generic_plan_of_next(alice.pk, assignment.pk), Turn._meta.db_table)

    assert reads and all(kind in ("Index Scan", "Index Only Scan") for kind, _rows in reads), reads
    assert sum(rows for _kind, rows in reads) == 1  # the one turn of the unit


class PtkbCampaign:
    """Two one-turn units with a PTKB step each, two copies per unit, three assessors."""

    def __init__(self) -> None:
        self.users = {name: UserFactory() for name in ("alice", "bob", "carol")}
        self.names = {user.pk: name for name, user in self.users.items()}
        self.assignment = relevance_campaign(
            assessors=list(self.users.values()), n_turns=2, n_passages=2, n_ptkb=2, redundancy=2
        )
        entries = PoolEntry.objects.filter(pool=self.assignment.pool).select_related("turn")
        self.canonical = {(e.turn_id, e.passage_id): f"t{e.turn.position}.p{e.order}" for e in entries}
        self.slots = {
            s.pk: f"u{s.unit.position}"  # not the copy: which copy an assessor claims at once is a race
            for s in WorkSlot.objects.filter(assignment=self.assignment).select_related("unit")
        }
        self.clients = {}
        for name, user in self.users.items():
            self.clients[name] = Client()
            self.clients[name].force_login(user)
        self.step: dict[str, dict] = {}

    def next(self, who: str) -> tuple:
        response = self.clients[who].post(
            reverse("relevance-api-next", args=[self.assignment.pk]), content_type="application/json"
        )
        data = response.json() if response.content else None
        if response.status_code == 200:
            self.step[who] = data
            data = (self.slots[data["slot"]], self.canonical[(data["turn_pk"], data["passage_id"])])
        elif response.status_code == 409:
            self.step[who] = {**self.step[who], "slot": data["slot"]}
            data = (data["code"], self.slots[data["slot"]], data["url"].count("/"))
        return ("next", who, response.status_code, data)

    def grade(self, who: str) -> tuple:
        step = self.step[who]
        body = {"turn_pk": step["turn_pk"], "passage_id": step["passage_id"], "grade": 3, "next": True}
        response = self.clients[who].post(
            reverse("relevance-api-grade", args=[step["slot"]]), body, content_type="application/json"
        )
        data = response.json()
        if response.status_code == 201:
            following = data["next"]
            if following is not None:
                self.step[who] = following
            data = (
                self.canonical[(data["turn_pk"], data["passage_id"])],
                None
                if following is None
                else self.canonical[(following["turn_pk"], following["passage_id"])],
                data["unit_complete"],
            )
        return ("grade", who, response.status_code, data)

    def ptkb(self, who: str) -> tuple:
        step = self.step[who]
        statements = PtkbStatement.objects.filter(topic__turns__pk=step["turn_pk"]).order_by("pk")
        form = {f"s{s.pk}": i % 2 for i, s in enumerate(statements)}
        url = reverse("relevance-ptkb", args=[step["slot"], step["turn_pk"]])
        response = self.clients[who].post(url, {**form, "time_spent_ms": 100})
        return ("ptkb", who, response.status_code, response.get("Location", "").count("/"))

    def state(self) -> dict:
        relevance = sorted(
            (self.names[j.judge.user_id], self.canonical[(j.turn_id, j.passage_id)], j.grade)
            for j in RelevanceJudgment.objects.filter(
                turn__topic__collection=self.assignment.pool.collection
            ).select_related("judge")
        )
        ptkb = PtkbJudgment.objects.filter(turn__topic__collection=self.assignment.pool.collection).count()
        slots = sorted(
            (self.slots[s.pk], self.names.get(s.assessor_id), s.completed_at is not None)
            for s in WorkSlot.objects.filter(assignment=self.assignment)
        )
        return {"relevance": relevance, "ptkb": ptkb, "slots": slots}


def _at_once(call, names: list[str]) -> list:
    seen, errors = at_the_same_instant(call, names)
    assert errors == []
    return seen


def _ptkb_script(campaign: PtkbCampaign) -> list:
    seen = _at_once(campaign.next, ["alice", "bob"])  # both copies of the first unit, at the same instant
    seen += _at_once(campaign.grade, ["alice", "bob"])  # each in their own copy
    seen += _at_once(campaign.grade, ["alice", "bob"])  # the last passages: the PTKB step is left
    seen.append(campaign.next("alice"))  # 409: the PTKB step, on the page
    seen.append(campaign.ptkb("alice"))  # answered: the copy is closed
    seen += _at_once(campaign.next, ["alice", "carol"])  # the second unit, both copies, at once
    seen.append(campaign.next("bob"))  # still the PTKB step of his copy
    WorkSlot.objects.filter(assessor=campaign.users["bob"]).update(
        leased_until=timezone.now() - timedelta(minutes=1)
    )
    seen.append(campaign.next("carol"))  # carol holds a copy of the second unit already: no takeover
    seen.append(campaign.grade("bob"))  # his lease ran out, but no one took the copy: still his
    seen += _at_once(campaign.grade, ["alice", "carol"])
    return [seen, campaign.state()]


@pytest.mark.django_db(transaction=True)
def test_the_statements_answer_the_ptkb_step_and_assessors_grading_at_once_as_the_rules_say():
    seen, state = _ptkb_script(PtkbCampaign())
    assert [s[2] for s in seen] == [200, 200, 201, 201, 201, 201, 409, 302, 200, 200, 409, 200, 201, 201, 201]
    assert seen[4][3] == ("t1.p1", None, False)  # graded, nothing next, the unit not complete
    assert seen[6][3][0] == "ptkb_left"
    assert state["ptkb"] == 2
    assert len(state["relevance"]) == 2 + 2 + 2
    assert state["slots"] == [
        ("u0", "alice", True),
        ("u0", "bob", False),
        ("u1", "alice", False),
        ("u1", "carol", False),
    ]
