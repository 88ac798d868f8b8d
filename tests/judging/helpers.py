"""What the judging tests share besides fixtures: running a command, and the arguments and query the
hybrid tests give for the collections of conftest.py."""

from __future__ import annotations

from io import StringIO

from django.core.management import call_command

# The size of `hybrid_collection`.
TURNS, PASSAGES = 40, 6

# The hybrid commands' arguments on the `hybrid_collection` fixture, and the estimate page's query on
# `views_collection`.
BASE = ["--collection", "hybrid", "--task", "relevance", "--machine-judge", "llm"]
QUERY = {"task": "relevance", "human_judge": "nist", "machine_judge": "llm", "measure": "nDCG@5"}


def run(name: str, *args: str) -> str:
    """What command `name` writes to stdout (its stderr is dropped)."""
    out = StringIO()
    call_command(name, *args, stdout=out, stderr=StringIO())
    return out.getvalue()
