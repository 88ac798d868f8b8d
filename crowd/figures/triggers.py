"""The triggers that keep the campaign page's figures (crowd/figures/models.py) true, written by PostgreSQL
with the answers, assignments, items, batches and campaigns.

The campaign page shows its batches by state, its cost, each worker's answers and test accuracy, and
Krippendorff's alpha over every pair. Counting them on each view reads every answer of the campaign, and a
TREC-sized campaign has millions. Every writer (the worker pages, MTurk sync and review, panels, extend,
the admin, a cascade) goes through the tables, so their statement-level triggers keep the figures in the
writer's transaction, in two steps:

- counted rows, one per key a statement touched (a batch, a pair, a worker in a campaign), each made if
  missing, locked, then counted again from the tables. The lock is taken before the count is read, so a
  concurrent writer of the same key counts after the other commits and sees its rows. Each count reads
  one batch's assignments, one pair's answers or one worker's answers in one campaign.
- sums over those rows (a campaign's figures, its pairs by votes), changed by the difference between the
  counted rows' old and new versions that the counted rows' own triggers see: additions, which two
  writers can make in either order.

Only confirmed answers count, as the page counts them: the rules (what votes, what is paid, what is
provisional) are written into the SQL from `VOTING_STATUSES` and the models' statuses.

`figures_install` puts them in place after `migrate` (and after a test flush) from crowd's `post_migrate`,
idempotently; when it (re)makes them it counts everything again in the same transaction, so an existing
database and a test database made without migrations start true. A TRUNCATE of a counted table counts
everything again too.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.db import connections, transaction

from annotation.models import NuggetSupport
from core.triggers import statement_trigger_make, tables_present, triggers_on
from crowd.models import (
    VOTING_STATUSES,
    BatchFigures,
    BatchItem,
    CampaignFigures,
    CrowdAnswer,
    CrowdAssignment,
    CrowdBatch,
    CrowdCampaign,
    ItemVotes,
    TestQuestion,
    VoteProfile,
    WorkerFigures,
)

PREFIX = "assay_crowd_figures"


def _literals(values: Any) -> str:
    # The statuses and kinds are the models' own short ASCII constants.
    return ", ".join(f"'{value}'" for value in values)


def _tables(using: str) -> dict[str, str]:
    quote = connections[using].ops.quote_name
    models = {
        "answers": CrowdAnswer,
        "assignments": CrowdAssignment,
        "items": BatchItem,
        "batches": CrowdBatch,
        "campaigns": CrowdCampaign,
        "tests": TestQuestion,
        "campaign_figures": CampaignFigures,
        "batch_figures": BatchFigures,
        "worker_figures": WorkerFigures,
        "item_votes": ItemVotes,
        "profiles": VoteProfile,
    }
    return {key: quote(model._meta.db_table) for key, model in models.items()}


def _helpers(using: str) -> dict[str, tuple[str, str]]:
    """{function name: (its arguments, its body)}: the counts of the keyed rows, the sums over them, and
    the count of everything."""
    t = _tables(using)
    voting = _literals(VOTING_STATUSES)
    accepted = f"'{CrowdAssignment.Status.ACCEPTED}'"
    unpaid = _literals([CrowdAssignment.Status.ACCEPTED, CrowdAssignment.Status.REJECTED])
    takeable = _literals([CrowdBatch.Status.OPEN, CrowdBatch.Status.PUBLISHED])
    three_way = f"'{CrowdCampaign.Kind.NUGGET_SUPPORT}'"
    s0, s1, s2 = (f"'{value}'" for value in NuggetSupport.values)
    helpers: dict[str, tuple[str, str]] = {}

    helpers[f"{PREFIX}_batches"] = (
        "ids bigint[]",
        f"""
BEGIN
INSERT INTO {t["batch_figures"]} (batch_id, campaign_id, max_assignments, takeable, submitted, passed, accepted,
  paid, bonus)
  SELECT b.id, b.campaign_id, b.max_assignments, b.status IN ({takeable}), 0, 0, 0, 0, 0
  FROM {t["batches"]} b WHERE b.id = ANY(ids) ORDER BY b.id ON CONFLICT (batch_id) DO NOTHING;
PERFORM 1 FROM {t["batch_figures"]} k WHERE k.batch_id = ANY(ids) ORDER BY k.batch_id FOR UPDATE;
DELETE FROM {t["batch_figures"]} k WHERE k.batch_id = ANY(ids)
  AND NOT EXISTS (SELECT 1 FROM {t["batches"]} b WHERE b.id = k.batch_id);
UPDATE {t["batch_figures"]} k SET campaign_id = b.campaign_id, max_assignments = b.max_assignments,
  takeable = b.status IN ({takeable}), submitted = c.submitted, passed = c.passed, accepted = c.accepted,
  paid = c.paid, bonus = c.bonus
  FROM {t["batches"]} b CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE a.status IN ({voting})) AS submitted,
      count(*) FILTER (WHERE a.status IN ({voting}) AND a.passed_tests) AS passed,
      count(*) FILTER (WHERE a.status = {accepted}) AS accepted,
      count(*) FILTER (WHERE a.status NOT IN ({unpaid})) AS paid,
      coalesce(sum(a.bonus) FILTER (WHERE a.status NOT IN ({unpaid})), 0) AS bonus
    FROM {t["assignments"]} a WHERE a.batch_id = b.id
  ) c
  WHERE b.id = k.batch_id AND k.batch_id = ANY(ids)
  AND (k.campaign_id, k.max_assignments, k.takeable, k.submitted, k.passed, k.accepted, k.paid, k.bonus)
    IS DISTINCT FROM (b.campaign_id, b.max_assignments, b.status IN ({takeable}), c.submitted, c.passed,
    c.accepted, c.paid, c.bonus);
END
""",
    )

    helpers[f"{PREFIX}_items"] = (
        "ids bigint[]",
        f"""
BEGIN
INSERT INTO {t["item_votes"]} (item_id, campaign_id, v0, v1, v2)
  SELECT i.id, b.campaign_id, 0, 0, 0 FROM {t["items"]} i JOIN {t["batches"]} b ON b.id = i.batch_id
  WHERE i.id = ANY(ids) AND i.test_question_id IS NULL ORDER BY i.id ON CONFLICT (item_id) DO NOTHING;
PERFORM 1 FROM {t["item_votes"]} k WHERE k.item_id = ANY(ids) ORDER BY k.item_id FOR UPDATE;
DELETE FROM {t["item_votes"]} k WHERE k.item_id = ANY(ids) AND NOT EXISTS (
  SELECT 1 FROM {t["items"]} i WHERE i.id = k.item_id AND i.test_question_id IS NULL);
UPDATE {t["item_votes"]} k SET campaign_id = b.campaign_id, v0 = c.v0, v1 = c.v1, v2 = c.v2
  FROM {t["items"]} i JOIN {t["batches"]} b ON b.id = i.batch_id JOIN {t["campaigns"]} p ON p.id = b.campaign_id
  CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE CASE WHEN p.kind = {three_way} THEN a.support = {s0} ELSE NOT a.matched END) AS v0,
      count(*) FILTER (WHERE CASE WHEN p.kind = {three_way} THEN a.support = {s1} ELSE a.matched END) AS v1,
      count(*) FILTER (WHERE p.kind = {three_way} AND a.support = {s2}) AS v2
    FROM {t["answers"]} a JOIN {t["assignments"]} s ON s.id = a.assignment_id
    WHERE a.item_id = i.id AND s.passed_tests AND s.status IN ({voting})
  ) c
  WHERE i.id = k.item_id AND k.item_id = ANY(ids)
  AND (k.campaign_id, k.v0, k.v1, k.v2) IS DISTINCT FROM (b.campaign_id, c.v0, c.v1, c.v2);
END
""",
    )

    helpers[f"{PREFIX}_workers"] = (
        "campaigns bigint[], workers bigint[]",
        f"""
BEGIN
INSERT INTO {t["worker_figures"]} (campaign_id, worker_id, assignments, answers, tests, tests_right)
  SELECT p.campaign_id, p.worker_id, 0, 0, 0, 0 FROM unnest(campaigns, workers) AS p(campaign_id, worker_id)
  WHERE EXISTS (SELECT 1 FROM {t["campaigns"]} c WHERE c.id = p.campaign_id)
  ORDER BY p.campaign_id, p.worker_id ON CONFLICT (campaign_id, worker_id) DO NOTHING;
PERFORM 1 FROM {t["worker_figures"]} k JOIN unnest(campaigns, workers) AS p(campaign_id, worker_id)
  ON k.campaign_id = p.campaign_id AND k.worker_id = p.worker_id ORDER BY k.campaign_id, k.worker_id FOR UPDATE OF k;
UPDATE {t["worker_figures"]} k SET assignments = c.assignments, answers = d.answers, tests = d.tests,
  tests_right = d.tests_right
  FROM unnest(campaigns, workers) AS p(campaign_id, worker_id)
  CROSS JOIN LATERAL (
    SELECT count(*) AS assignments FROM {t["assignments"]} s JOIN {t["batches"]} b ON b.id = s.batch_id
    WHERE b.campaign_id = p.campaign_id AND s.worker_id = p.worker_id AND s.status <> {accepted}
  ) c CROSS JOIN LATERAL (
    SELECT count(*) AS answers, count(*) FILTER (WHERE i.test_question_id IS NOT NULL) AS tests,
      count(*) FILTER (WHERE (q.support = '' AND q.answer = a.matched) OR (q.support > '' AND q.support = a.support))
        AS tests_right
    FROM {t["answers"]} a JOIN {t["assignments"]} s ON s.id = a.assignment_id
    JOIN {t["batches"]} b ON b.id = s.batch_id JOIN {t["items"]} i ON i.id = a.item_id
    LEFT JOIN {t["tests"]} q ON q.id = i.test_question_id
    WHERE b.campaign_id = p.campaign_id AND s.worker_id = p.worker_id AND s.status <> {accepted}
  ) d
  WHERE k.campaign_id = p.campaign_id AND k.worker_id = p.worker_id
  AND (k.assignments, k.answers, k.tests, k.tests_right)
    IS DISTINCT FROM (c.assignments, d.answers, d.tests, d.tests_right);
END
""",
    )

    helpers[f"{PREFIX}_everything"] = (
        "",
        f"""
DECLARE campaigns bigint[]; workers bigint[];
BEGIN
-- The counted rows first: their triggers take their parts off the sums, which then go.
DELETE FROM {t["batch_figures"]};
DELETE FROM {t["item_votes"]};
DELETE FROM {t["campaign_figures"]};
DELETE FROM {t["profiles"]};
DELETE FROM {t["worker_figures"]};
INSERT INTO {t["campaign_figures"]} (campaign_id, batches, batches_complete, batches_full, batches_open,
  batches_closed, places, answered, paid, bonus)
  SELECT id, 0, 0, 0, 0, 0, 0, 0, 0, 0 FROM {t["campaigns"]} ORDER BY id;
PERFORM {PREFIX}_batches(ARRAY(SELECT id FROM {t["batches"]} ORDER BY id));
PERFORM {PREFIX}_items(ARRAY(SELECT DISTINCT item_id FROM {t["answers"]} ORDER BY item_id));
SELECT array_agg(campaign_id ORDER BY campaign_id, worker_id), array_agg(worker_id ORDER BY campaign_id, worker_id)
  INTO campaigns, workers FROM (SELECT DISTINCT b.campaign_id, s.worker_id FROM {t["assignments"]} s
  JOIN {t["batches"]} b ON b.id = s.batch_id) w;
IF campaigns IS NOT NULL THEN PERFORM {PREFIX}_workers(campaigns, workers); END IF;
END
""",
    )

    def batch_sums(rows: str) -> str:
        # What one batch's row adds to its campaign's figures, signed.
        return f"""SELECT r.sign, r.campaign_id, r.max_assignments, r.paid, r.bonus,
      least(r.submitted, r.max_assignments) AS answered,
      (r.submitted >= r.max_assignments AND r.passed >= r.submitted)::int AS complete,
      (r.submitted >= r.max_assignments AND r.passed < r.submitted)::int AS full_,
      (r.submitted < r.max_assignments AND r.takeable)::int AS open_,
      (r.submitted < r.max_assignments AND NOT r.takeable)::int AS closed
    FROM ({rows}) r"""

    def add_batches(rows: str) -> str:
        return f"""
BEGIN
INSERT INTO {t["campaign_figures"]} AS f (campaign_id, batches, batches_complete, batches_full, batches_open,
  batches_closed, places, answered, paid, bonus)
  SELECT x.campaign_id, sum(x.sign), sum(x.sign * x.complete), sum(x.sign * x.full_), sum(x.sign * x.open_),
    sum(x.sign * x.closed), sum(x.sign * x.max_assignments), sum(x.sign * x.answered), sum(x.sign * x.paid),
    sum(x.sign * x.bonus)
  FROM ({batch_sums(rows)}) x
  WHERE EXISTS (SELECT 1 FROM {t["campaigns"]} c WHERE c.id = x.campaign_id)
  GROUP BY x.campaign_id ORDER BY x.campaign_id
  ON CONFLICT (campaign_id) DO UPDATE SET batches = f.batches + excluded.batches,
    batches_complete = f.batches_complete + excluded.batches_complete,
    batches_full = f.batches_full + excluded.batches_full, batches_open = f.batches_open + excluded.batches_open,
    batches_closed = f.batches_closed + excluded.batches_closed, places = f.places + excluded.places,
    answered = f.answered + excluded.answered, paid = f.paid + excluded.paid, bonus = f.bonus + excluded.bonus;
RETURN NULL;
END
"""

    def add_profiles(rows: str) -> str:
        return f"""
BEGIN
INSERT INTO {t["profiles"]} AS f (campaign_id, v0, v1, v2, units)
  SELECT r.campaign_id, r.v0, r.v1, r.v2, sum(r.sign) FROM ({rows}) r
  WHERE r.v0 + r.v1 + r.v2 >= 2 AND EXISTS (SELECT 1 FROM {t["campaigns"]} c WHERE c.id = r.campaign_id)
  GROUP BY r.campaign_id, r.v0, r.v1, r.v2 ORDER BY r.campaign_id, r.v0, r.v1, r.v2
  ON CONFLICT (campaign_id, v0, v1, v2) DO UPDATE SET units = f.units + excluded.units;
RETURN NULL;
END
"""

    for name, add in (("batch_figures", add_batches), ("item_votes", add_profiles)):
        helpers[f"{PREFIX}_{name}_insert"] = ("", add("SELECT 1 AS sign, * FROM new_rows"))
        helpers[f"{PREFIX}_{name}_delete"] = ("", add("SELECT -1 AS sign, * FROM old_rows"))
        helpers[f"{PREFIX}_{name}_update"] = (
            "",
            add("SELECT 1 AS sign, * FROM new_rows UNION ALL SELECT -1 AS sign, * FROM old_rows"),
        )
    return helpers


def _changed(columns: tuple[str, ...]) -> str:
    """The old and the new rows of an update whose `columns` changed (ids paired)."""
    old = ", ".join(f"o.{c}" for c in columns)
    new = ", ".join(f"n.{c}" for c in columns)
    differ = f"FROM old_rows o JOIN new_rows n ON n.id = o.id WHERE ({old}) IS DISTINCT FROM ({new})"
    return f"(SELECT o.* {differ} UNION ALL SELECT n.* {differ})"


# What each counted table's rows touch: (batch ids, pair item ids, (campaign, worker) pairs) as queries of
# the relation `r`, and the columns an update must change to touch anything.
_KEYS: dict[str, tuple[tuple[str, ...], str | None, str | None, str | None]] = {
    "answers": (
        ("assignment_id", "item_id", "matched", "support"),
        None,
        "SELECT r.item_id AS id FROM {rows} r",
        "SELECT b.campaign_id, s.worker_id FROM {rows} r JOIN {assignments} s ON s.id = r.assignment_id "
        "JOIN {batches} b ON b.id = s.batch_id",
    ),
    "assignments": (
        ("batch_id", "worker_id", "status", "passed_tests", "bonus"),
        "SELECT r.batch_id AS id FROM {rows} r",
        "SELECT a.item_id AS id FROM {answers} a JOIN {rows} r ON a.assignment_id = r.id",
        "SELECT b.campaign_id, r.worker_id FROM {rows} r JOIN {batches} b ON b.id = r.batch_id",
    ),
    "items": (("batch_id", "test_question_id"), None, "SELECT r.id FROM {rows} r", None),
    "batches": (("campaign_id", "max_assignments", "status"), "SELECT r.id FROM {rows} r", None, None),
    "campaigns": (
        ("kind",),
        None,
        "SELECT i.id FROM {items} i JOIN {batches} b ON b.id = i.batch_id JOIN {rows} r ON r.id = b.campaign_id",
        None,
    ),
}


def _touch(using: str, table: str, rows: str, *, deleted: bool = False) -> str:
    """A trigger function's body: what the rows `rows` touched, counted again."""
    t = _tables(using)
    _columns, batches, items, workers = _KEYS[table]
    names = {**t, "rows": rows}
    body = "\nDECLARE ids bigint[]; campaigns bigint[]; workers bigint[];\nBEGIN\n"
    if batches:
        query = batches.format(**names)
        body += f"ids := ARRAY(SELECT DISTINCT id FROM ({query}) w WHERE id IS NOT NULL ORDER BY id);\n"
        body += f"IF cardinality(ids) > 0 THEN PERFORM {PREFIX}_batches(ids); END IF;\n"
    if items:
        query = items.format(**names)
        body += f"ids := ARRAY(SELECT DISTINCT id FROM ({query}) w WHERE id IS NOT NULL ORDER BY id);\n"
        body += f"IF cardinality(ids) > 0 THEN PERFORM {PREFIX}_items(ids); END IF;\n"
    if workers:
        query = workers.format(**names)
        body += (
            "SELECT array_agg(campaign_id ORDER BY campaign_id, worker_id), "
            "array_agg(worker_id ORDER BY campaign_id, worker_id) INTO campaigns, workers "
            f"FROM (SELECT DISTINCT campaign_id, worker_id FROM ({query}) p "
            "WHERE campaign_id IS NOT NULL AND worker_id IS NOT NULL) w;\n"
            f"IF campaigns IS NOT NULL THEN PERFORM {PREFIX}_workers(campaigns, workers); END IF;\n"
        )
    if table == "campaigns" and deleted:
        # A campaign deleted: its figures go with it (its batches' and pairs' rows went with them).
        for kept in ("campaign_figures", "worker_figures", "item_votes", "profiles"):
            body += f"DELETE FROM {t[kept]} WHERE campaign_id IN (SELECT id FROM old_rows);\n"
    return body + "RETURN NULL;\nEND\n"


def _triggers(using: str) -> dict[str, tuple[str, str, str]]:
    """{trigger name: (its table key, its event clause, its function body)}."""
    helpers = _helpers(using)
    # Every trigger's body names the helpers' version, so that a changed helper remakes them all.
    version = hashlib.sha256(repr(sorted(helpers.items())).encode()).hexdigest()[:16]
    stamp = f"\n-- figures {version}"
    triggers: dict[str, tuple[str, str, str]] = {}
    for table, (columns, *_keys) in _KEYS.items():
        short = f"{PREFIX}_{table}"
        if table != "campaigns":
            triggers[f"{short}_insert"] = (
                table,
                "AFTER INSERT ON {table} REFERENCING NEW TABLE AS new_rows",
                _touch(using, table, "new_rows") + stamp,
            )
            triggers[f"{short}_truncate"] = (
                table,
                "AFTER TRUNCATE ON {table}",
                f"\nBEGIN\nPERFORM {PREFIX}_everything();\nRETURN NULL;\nEND\n{stamp}",
            )
        triggers[f"{short}_delete"] = (
            table,
            "AFTER DELETE ON {table} REFERENCING OLD TABLE AS old_rows",
            _touch(using, table, "old_rows", deleted=True) + stamp,
        )
        triggers[f"{short}_update"] = (
            table,
            "AFTER UPDATE ON {table} REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows",
            _touch(using, table, _changed(columns)) + stamp,
        )
    for kept in ("batch_figures", "item_votes"):
        for event, clause in (
            ("insert", "AFTER INSERT ON {table} REFERENCING NEW TABLE AS new_rows"),
            ("delete", "AFTER DELETE ON {table} REFERENCING OLD TABLE AS old_rows"),
            ("update", "AFTER UPDATE ON {table} REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows"),
        ):
            name = f"{PREFIX}_{kept}_{event}"
            triggers[name] = (kept, clause, helpers[name][1] + stamp)
    return triggers


def figures_install(*, using: str = "default") -> bool:
    """Install (idempotently) the triggers on the crowd's tables, once the tables exist; when any was
    missing or differs from what this module makes, (re)make them all and count everything again, in one
    transaction. Whether it (re)made them."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        return False
    t = _tables(using)
    names = [name.strip('"') for name in t.values()]
    wanted = _triggers(using)
    with transaction.atomic(using=using), connection.cursor() as cursor:
        if len(tables_present(cursor, names)) < len(names):
            return False
        present = {
            name: source
            for triggers in triggers_on(cursor, names).values()
            for name, source in triggers.items()
            if name.startswith(PREFIX)
        }
        if present == {name: body for name, (_table, _event, body) in wanted.items()}:
            return False
        # No answer, assignment, item or batch slips between the count and the triggers.
        counted = ", ".join(t[key] for key in ("answers", "assignments", "items", "batches", "campaigns"))
        cursor.execute(f"LOCK TABLE {counted} IN SHARE ROW EXCLUSIVE MODE")
        for name, (arguments, body) in _helpers(using).items():
            if name in wanted:
                continue
            cursor.execute(
                f"CREATE OR REPLACE FUNCTION {name}({arguments}) RETURNS void LANGUAGE plpgsql AS $${body}$$"
            )
        for name, (table, event, body) in wanted.items():
            statement_trigger_make(cursor, name=name, on=event.format(table=t[table]), body=body)
        cursor.execute(f"SELECT {PREFIX}_everything()")
    return True


def figures_install_receiver(sender: Any, using: str = "default", **kwargs: Any) -> None:
    """crowd's `post_migrate` receiver."""
    figures_install(using=using)
