"""What the judging tests share besides fixtures: running a command, reading a page whose figures a task
worker computes, and the arguments and query the hybrid tests give for the collections of conftest.py."""

from __future__ import annotations

from io import StringIO
from typing import Any

from django.core.management import call_command
from django.test import Client

from tests.background import tasks_run_ready

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


def report_page(client: Client, url: str, data: dict[str, Any] | None = None) -> Any:
    """A page showing a stored report, once a task worker has computed it: the first view queues the
    report, the worker runs here, and the second view (returned) shows the stored figures."""
    client.get(url, data)
    tasks_run_ready()
    return client.get(url, data)
