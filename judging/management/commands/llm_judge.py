"""llm_judge: the LLM tasks of `judge` under their first spelling (--task TASK --judge-name NAME)."""

from __future__ import annotations

from django.core.management.base import CommandParser

from judging.management.commands.judge import LLM_TASK_NAMES
from judging.management.commands.judge import Command as JudgeCommand


class Command(JudgeCommand):
    help = (
        "Label a collection with an LLM judge (relevance, nuggets, ntr, support, nuggets-create, importance "
        "or assignment): the same job as "
        "`judge TASK --judge NAME`, spelt `--task TASK --judge-name NAME`. Every call is cached in the "
        "database, so running the same command again, or after a kill, pays for no call twice and resumes "
        "the unfinished job. --dry-run prints how many calls the job would make and what they would cost."
    )

    def add_task_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--task", required=True, choices=LLM_TASK_NAMES)
        parser.add_argument(
            "--judge-name", required=True, help="Name of the LLM judge whose labels to write."
        )

    def add_nli_arguments(self, parser: CommandParser) -> None:
        """NLI tasks are `judge ntn` and `judge dedup`; this spelling takes none of their options."""
