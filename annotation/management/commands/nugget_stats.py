from django.core.management.base import CommandError

from annotation.commands import CollectionCommand
from annotation.judge_menus import judges_with_labels
from annotation.nuggets.selectors import nugget_set_stats, nugget_turn_counts, nugget_turn_rows


class Command(CollectionCommand):
    help = (
        "Print gold nugget counts per turn and in all (nuggets, de-duplicated nuggets, mean words per nugget), "
        "as in the CONE-RAG statistics table. Without --judge: one summary line per judge with nuggets, "
        "and the per-turn table too when the collection holds a single nugget set."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--judge", help="Judge whose set to count turn by turn.")

    def handle(self, *args, collection, judge, **options):
        target = self.get_collection(collection)
        judges = (
            [self.get_judge(judge)] if judge else list(judges_with_labels(collection=target, task="nuggets"))
        )
        if not judges:
            raise CommandError(
                f"no nuggets in collection {target.name!r}: import a set with import_nuggets, "
                "or have assessors select spans on the Nuggets pages"
            )
        summaries = nugget_set_stats(collection=target, judges=judges)
        # One set (or one named): per turn as well, as the paper's table breaks it down.
        if len(judges) == 1:
            rows = nugget_turn_rows(collection=target, judge=judges[0]).iterator(chunk_size=2000)
            self.stdout.write(f"nugget set of {judges[0].name}")
            self.stdout.write(f"{'turn':<12} {'nuggets':>8} {'dedup':>8} {'words/nugget':>13}")
            for row in nugget_turn_counts(rows, stats=summaries[0]):
                self.stdout.write(
                    f"{row.turn_id:<12} {row.nuggets:>8} {row.deduplicated:>8} {row.mean_words:>13.2f}"
                )
        self.stdout.write(
            f"{'judge':<30} {'turns':>6} {'nuggets':>8} {'dedup':>8} {'per turn':>9} {'dedup/turn':>11} {'words':>7}"
        )
        for s in summaries:
            self.stdout.write(
                f"{s.judge.name:<30} {s.n_turns:>6} {s.nuggets:>8} {s.deduplicated:>8} {s.mean_per_turn:>9.2f} "
                f"{s.mean_deduplicated_per_turn:>11.2f} {s.mean_words:>7.2f}"
            )
