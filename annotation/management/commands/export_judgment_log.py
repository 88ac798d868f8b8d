"""export_judgment_log: every relevance / PTKB label of a collection as CSV, with assessor, effort and times."""

from django.core.management.base import CommandParser

from annotation.commands import CollectionCommand
from annotation.relevance.io import LOG_TASKS, judgment_log_lines, judgment_log_rows, judgment_log_write
from core.wording import plural


class Command(CollectionCommand):
    help = (
        "Write the judgment log of a collection as CSV: judge, username, judge_kind, task, turn, unit "
        "(passage or PTKB statement id), label (grade 0-4 or 0/1), time_spent_ms, created_at, updated_at. "
        "All judges unless --judge, both tasks unless --task."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--judge", help="Only the labels of this judge.")
        parser.add_argument("--task", choices=LOG_TASKS, help="Only this task (default: relevance and ptkb).")
        parser.add_argument("--output", "-o", help="File to write (default: standard output).")

    def handle(self, *args, collection, judge, task, output, **options):
        the_collection = self.get_collection(collection)
        the_judge = self.get_judge(judge) if judge else None
        tasks = [task] if task else LOG_TASKS
        if output:
            rows = judgment_log_rows(collection=the_collection, judge=the_judge, tasks=tasks)
            with open(output, "w", encoding="utf-8", newline="") as handle:
                count = judgment_log_write(handle, rows)
            self.stderr.write(f"{output}: {plural(count, 'judgment')}")
        else:
            for block in judgment_log_lines(collection=the_collection, judge=the_judge, tasks=tasks):
                self.stdout.write(block, ending="")
