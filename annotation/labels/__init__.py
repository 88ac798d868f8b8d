"""What every label family shares.

Each family (relevance, PTKB, nuggets, support, RAG nuggets) keeps its parts in its own package:
`models.py`, `writer.py` (the one writer of its rows), `formats.py` (its files' text), `io.py` (its files
in and out of the database) and `family.py` (its declaration, read by agreement, estimates and exports).
Pages, the JSON API, imports, crowd aggregation and machine judges all record a label through its family's
writer, so that the rules of a label (its scale, how time spent adds up over revisions, what a revision
replaces) live in one place; `writer.py` here holds the helpers those writers share. The assessor's
relevance grade is the one write made in a statement of its own (annotation/relevance/grade_sql.py, checks
and next passage in one round trip), and that statement embeds relevance's upsert (`relevance_upsert_sql`),
so a grade's rules are still written down once.
"""
