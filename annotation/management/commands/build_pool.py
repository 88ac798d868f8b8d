"""Build a relevance pool from the collection's runs: plain top-K or iKAT 2024 adaptive pooling."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from annotation.commands import CollectionCommand
from annotation.relevance.pooling import PoolExists, PoolingFailed, pool_build, turns_resolve
from core.wording import plural


class Command(CollectionCommand):
    help = (
        "Pool (turn, passage) pairs for assessment: the union of every run's top --depth per turn, or with "
        "--adaptive every passage ranked 1..--always-depth (default 5) plus those ranked up to --depth that "
        "--filter-judge did not grade below --min-grade. Prints pool size per turn, how many passages the "
        "filter saved (only passages it graded below --min-grade count), and the turns with deeper passages "
        "the filter judge never graded, which enter the pool unfiltered. Restrict to some turns with "
        "--turns or --turns-file (one turn id per line)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--depth", type=int, required=True, help="How deep each run's ranking is read.")
        parser.add_argument("--name", help="Pool name (default: depth<K> or adaptive<K>).")
        parser.add_argument("--turns", nargs="+", metavar="TURN", help="Only these turn ids.")
        parser.add_argument("--turns-file", help="File of turn ids to pool, one per line.")
        parser.add_argument("--adaptive", action="store_true", help="iKAT 2024 adaptive pooling.")
        parser.add_argument("--always-depth", type=int, default=5, help="Ranks always pooled when adaptive.")
        parser.add_argument("--filter-judge", help="Judge whose relevance grades admit ranks below the head.")
        parser.add_argument("--min-grade", type=int, help="Lowest filter grade that admits a passage (0-4).")
        parser.add_argument("--replace", action="store_true", help="Rebuild a pool of the same name.")

    def handle(self, *args: Any, **options: Any) -> None:
        collection = self.get_collection(options["collection"])
        adaptive = options["adaptive"]
        filter_judge = None
        if adaptive:
            if not options["filter_judge"] or options["min_grade"] is None:
                raise CommandError("--adaptive needs --filter-judge and --min-grade")
            if not 0 <= options["min_grade"] <= 4:
                raise CommandError("--min-grade must be between 0 and 4")
            filter_judge = self.get_judge(options["filter_judge"])
        elif options["filter_judge"] or options["min_grade"] is not None:
            raise CommandError("--filter-judge and --min-grade only apply with --adaptive")
        turn_ids: list[str] | None = options["turns"]
        if options["turns_file"]:
            try:
                turn_ids = (turn_ids or []) + Path(options["turns_file"]).read_text(encoding="utf-8").split()
            except OSError as exc:
                raise CommandError(f"cannot read {options['turns_file']}: {exc.strerror}") from None
        name = options["name"] or f"{'adaptive' if adaptive else 'depth'}{options['depth']}"
        progress = self.command_progress(options, unit="turns pooled")
        try:
            turns = turns_resolve(collection=collection, turn_ids=turn_ids)
            report = pool_build(
                collection=collection,
                name=name,
                depth=options["depth"],
                turns=turns,
                adaptive=adaptive,
                filter_judge=filter_judge,
                min_grade=options["min_grade"],
                always_depth=options["always_depth"],
                replace=options["replace"],
                progress=progress,
            )
        except PoolExists as exc:
            raise CommandError(f"{exc}: rebuild it with --replace, or choose another --name") from None
        except PoolingFailed as exc:
            raise CommandError(str(exc)) from None
        finally:
            progress.close()

        self.stdout.write("turn\tpooled\thead\tfilter\tsaved\tunfiltered")
        for line in report.turns:
            self.stdout.write(
                f"{line.turn_id}\t{line.pooled}\t{line.from_head}\t{line.from_filter}\t{line.saved}"
                f"\t{line.unfiltered}"
            )
        share = (
            f" ({report.saved / report.candidates:.1%} of {report.candidates})" if report.candidates else ""
        )
        self.stdout.write(
            self.style.SUCCESS(
                f"pool {name}: {plural(report.size, 'pair')} over {plural(len(report.turns), 'turn')}; "
                f"filter saved {report.saved}{share}"
            )
        )
        if report.unfiltered:
            self.stdout.write(self.style.WARNING(report.unfiltered_text))
