"""The triggers that keep `NuggetTurnCount` (a judge's nuggets on a turn, counted) true, written by
PostgreSQL with the nuggets and the sets' turns.

The nugget counts page shows, for every set of a collection, its turns, nuggets, de-duplicated nuggets
and words per nugget, and a set's figures turn by turn. Reading every nugget of the collection for that
grows with the sets. Every writer of nuggets (the editors, the imports, de-duplication, the admin, a
cascade) goes through the tables, so their statement-level triggers keep one row per judge and turn, in
the writer's transaction:

- a statement's rows name the (judge, turn) pairs it touched: those of its new and old rows, and, for a
  nugget, those of the nuggets its rows were derived from (`original`), which a de-duplicated set's
  change keeps or drops; an update names only the rows whose counted columns changed;
- each pair's row is made if missing, locked, then counted again from the tables. The lock is taken
  before the count is read, so a concurrent writer of the same turn counts after the other commits and
  sees its rows; rows are never deleted (a row at zero stays), so a waiting writer always finds its row.
- a TRUNCATE counts every pair again.

Words are counted as Python's `str.split()` counts them: runs of characters that are not whitespace,
whitespace being what `str.isspace()` says, written into the pattern from Python.

`nugget_counts_install` puts them in place after `migrate` (and after a test flush) from annotation's
`post_migrate`, idempotently; when it (re)makes them it counts every pair again in the same transaction,
so an existing database and a test database made without migrations start true.
"""

from __future__ import annotations

import sys
from typing import Any

from django.db import connections, transaction

from annotation.models import Nugget, NuggetSetTurn, NuggetTurnCount, Turn
from core.triggers import statement_trigger_make, tables_present, triggers_on

PREFIX = "assay_nugget_counts"


def _whitespace_class() -> str:
    """A bracket expression of PostgreSQL's regular expressions matching what `str.isspace()` calls
    whitespace, as ranges of `\\uXXXX` escapes."""
    spaces = [code for code in range(sys.maxunicode + 1) if chr(code).isspace()]
    ranges: list[tuple[int, int]] = []
    for code in spaces:
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1] = (ranges[-1][0], code)
        else:
            ranges.append((code, code))
    return "".join(
        f"\\u{start:04x}" if start == end else f"\\u{start:04x}-\\u{end:04x}" for start, end in ranges
    )


WORDS_PATTERN = f"[^{_whitespace_class()}]+"


def _tables(using: str) -> dict[str, str]:
    quote = connections[using].ops.quote_name
    return {
        "nuggets": quote(Nugget._meta.db_table),
        "set_turns": quote(NuggetSetTurn._meta.db_table),
        "turns": quote(Turn._meta.db_table),
        "kept": quote(NuggetTurnCount._meta.db_table),
    }


def _wanted(pairs: str) -> str:
    return f"SELECT DISTINCT judge_id, turn_id FROM ({pairs}) p WHERE judge_id IS NOT NULL AND turn_id IS NOT NULL"


def _recount(using: str, pairs: str) -> tuple[str, str, str]:
    """The statements that count again the (judge_id, turn_id) pairs of the relation `pairs` (aliased
    `p`): make the missing rows, lock the rows (a query), count."""
    t = _tables(using)
    make = f"""INSERT INTO {t["kept"]} (judge_id, turn_id, collection_id, covered, nuggets, words, unmarked,
  derived, derived_unmarked)
  SELECT p.judge_id, p.turn_id, t.collection_id, false, 0, 0, 0, 0, 0 FROM {pairs}
  JOIN {t["turns"]} t ON t.id = p.turn_id ORDER BY p.judge_id, p.turn_id
  ON CONFLICT (judge_id, turn_id) DO NOTHING"""
    lock = f"""SELECT 1 FROM {t["kept"]} k JOIN {pairs} ON k.judge_id = p.judge_id AND k.turn_id = p.turn_id
  ORDER BY k.judge_id, k.turn_id FOR UPDATE OF k"""
    count = f"""UPDATE {t["kept"]} k SET
  covered = EXISTS (SELECT 1 FROM {t["set_turns"]} s WHERE s.judge_id = k.judge_id AND s.turn_id = k.turn_id),
  nuggets = coalesce(c.nuggets, 0), words = coalesce(c.words, 0), unmarked = coalesce(c.unmarked, 0),
  derived = coalesce(c.derived, 0), derived_unmarked = coalesce(c.derived_unmarked, 0)
  FROM {pairs} LEFT JOIN LATERAL (
    SELECT count(*) AS nuggets, sum(regexp_count(n.text, '{WORDS_PATTERN}')) AS words,
      count(*) FILTER (WHERE n.duplicate_of_id IS NULL) AS unmarked,
      count(*) FILTER (WHERE d.derived) AS derived,
      count(*) FILTER (WHERE d.derived AND n.duplicate_of_id IS NULL) AS derived_unmarked
    FROM {t["nuggets"]} n
    CROSS JOIN LATERAL (SELECT EXISTS (SELECT 1 FROM {t["nuggets"]} o WHERE o.original_id = n.id) AS derived) d
    WHERE n.judge_id = p.judge_id AND n.turn_id = p.turn_id
  ) c ON true
  WHERE k.judge_id = p.judge_id AND k.turn_id = p.turn_id"""
    return make, lock, count


# The nuggets' columns a count reads: an update that changes none of them changes no count.
_COUNTED = ("judge_id", "turn_id", "text", "duplicate_of_id", "original_id")


def _changed(columns: tuple[str, ...]) -> str:
    """The old and the new rows of an update whose `columns` changed (ids paired)."""
    old = ", ".join(f"o.{c}" for c in columns)
    new = ", ".join(f"n.{c}" for c in columns)
    differ = f"FROM old_rows o JOIN new_rows n ON n.id = o.id WHERE ({old}) IS DISTINCT FROM ({new})"
    return f"SELECT o.* {differ} UNION ALL SELECT n.* {differ}"


def _functions(using: str) -> dict[str, tuple[str, str]]:
    """{trigger name: (its event clause, the query of the (judge_id, turn_id) pairs it counts again)}."""
    t = _tables(using)

    def nugget_pairs(rows: str) -> str:
        # A nugget's pair, and the pair of the nugget it was derived from, which it keeps in a
        # de-duplicated set.
        return (
            f"SELECT r.judge_id, r.turn_id FROM {rows} r UNION ALL SELECT o.judge_id, o.turn_id "
            f"FROM {rows} r JOIN {t['nuggets']} o ON o.id = r.original_id"
        )

    def set_pairs(rows: str) -> str:
        return f"SELECT r.judge_id, r.turn_id FROM {rows} r"

    everything = (
        f"SELECT judge_id, turn_id FROM {t['nuggets']} UNION ALL SELECT judge_id, turn_id FROM {t['set_turns']} "
        f"UNION ALL SELECT judge_id, turn_id FROM {t['kept']}"
    )
    changed = {"nuggets": f"({_changed(_COUNTED)})", "set_turns": f"({_changed(('judge_id', 'turn_id'))})"}
    functions: dict[str, tuple[str, str]] = {}
    for table, short, pairs in (("nuggets", "nugget", nugget_pairs), ("set_turns", "set_turn", set_pairs)):
        functions[f"{PREFIX}_{short}_insert"] = (
            "AFTER INSERT ON {table} REFERENCING NEW TABLE AS new_rows",
            pairs("new_rows"),
        )
        functions[f"{PREFIX}_{short}_delete"] = (
            "AFTER DELETE ON {table} REFERENCING OLD TABLE AS old_rows",
            pairs("old_rows"),
        )
        functions[f"{PREFIX}_{short}_update"] = (
            "AFTER UPDATE ON {table} REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows",
            pairs(changed[table]),
        )
        functions[f"{PREFIX}_{short}_truncate"] = ("AFTER TRUNCATE ON {table}", everything)
    return functions


def _body(using: str, pairs: str) -> str:
    """A trigger function's body: the pairs read once into two arrays, then counted again."""
    make, lock, count = _recount(using, "unnest(judges, turns) AS p(judge_id, turn_id)")
    order = "ORDER BY judge_id, turn_id"
    return (
        "\nDECLARE judges bigint[]; turns bigint[];\nBEGIN\n"
        f"SELECT array_agg(judge_id {order}), array_agg(turn_id {order}) INTO judges, turns FROM ({_wanted(pairs)}) w;\n"
        "IF judges IS NULL THEN RETURN NULL; END IF;\n"
        # PL/pgSQL runs a query whose rows it drops as PERFORM.
        f"{make};\nPERFORM {lock.removeprefix('SELECT ')};\n{count};\nRETURN NULL;\nEND\n"
    )


def _table_of(name: str) -> str:
    return "nuggets" if name.startswith(f"{PREFIX}_nugget_") else "set_turns"


def nugget_counts_install(*, using: str = "default") -> bool:
    """Install (idempotently) the triggers on the nuggets' and the set turns' tables, once the tables
    exist; when any was missing or differs from what this module makes, (re)make them all and count every
    pair again, in one transaction. Whether it (re)made them."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        return False
    t = _tables(using)
    names = [m._meta.db_table for m in (Nugget, NuggetSetTurn, NuggetTurnCount, Turn)]
    wanted = _functions(using)
    with transaction.atomic(using=using), connection.cursor() as cursor:
        if len(tables_present(cursor, names)) < len(names):
            return False
        on_tables = triggers_on(cursor, [Nugget._meta.db_table, NuggetSetTurn._meta.db_table])
        present = {
            name: source
            for triggers in on_tables.values()
            for name, source in triggers.items()
            if name.startswith(PREFIX)
        }
        if present == {name: _body(using, pairs) for name, (_, pairs) in wanted.items()}:
            return False
        # No nugget or set turn slips between the count and the triggers: both tables locked until commit.
        cursor.execute(f"LOCK TABLE {t['nuggets']}, {t['set_turns']} IN SHARE ROW EXCLUSIVE MODE")
        for name, (event, pairs) in wanted.items():
            statement_trigger_make(
                cursor, name=name, on=event.format(table=t[_table_of(name)]), body=_body(using, pairs)
            )
        cursor.execute(f"DELETE FROM {t['kept']}")
        every = f"SELECT judge_id, turn_id FROM {t['nuggets']} UNION ALL SELECT judge_id, turn_id FROM {t['set_turns']}"
        make, _lock, count = _recount(using, f"({_wanted(every)}) p")
        cursor.execute(make)
        cursor.execute(count)
    return True


def nugget_counts_install_receiver(sender: Any, using: str = "default", **kwargs: Any) -> None:
    """annotation's `post_migrate` receiver."""
    nugget_counts_install(using=using)
