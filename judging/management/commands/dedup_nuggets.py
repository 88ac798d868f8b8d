"""dedup_nuggets: a de-duplicated copy of a nugget set, turn by turn."""

from __future__ import annotations

from django.core.management.base import CommandError, CommandParser

from annotation.commands import CollectionCommand, import_judge_check
from annotation.models import Judge
from judging.clients.nli import NliError
from judging.machine.nli import NliJobError, nuggets_dedup


class Command(CollectionCommand):
    help = (
        "De-duplicate a judge's nuggets within each turn: exact duplicates after normalising case, "
        "whitespace and punctuation, then (unless --exact-only) nuggets that entail each other in both "
        "directions by the NLI model. Nuggets are visited by key in natural order ([2] before [10]), then "
        "row id; each duplicate points at the earliest surviving nugget it matches. Both sets are kept: "
        "source nuggets get duplicate_of, and survivors are copied to the judge --target (kind 'nli') with "
        "`original` set. Turns the target already holds are skipped, so a killed run resumes."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--judge", required=True, help="Judge whose nugget set is de-duplicated.")
        parser.add_argument(
            "--target", required=True, help="Name of the judge holding the de-duplicated set."
        )
        parser.add_argument("--model", help="NLI model directory or hub id (default: settings.NLI_MODEL).")
        parser.add_argument("--threshold", type=float, help="Entailment probability threshold (0-1).")
        parser.add_argument(
            "--batch-size", type=int, help="Pairs per forward pass (default: NLI_BATCH_SIZE)."
        )
        parser.add_argument("--exact-only", action="store_true", help="Skip the NLI pass (no model needed).")
        parser.add_argument("--turns", nargs="+", metavar="TURN", help="Only these turn ids.")

    def handle(self, *args, **options):
        collection = self.get_collection(options["collection"])
        if options["threshold"] is not None and not 0 <= options["threshold"] <= 1:
            raise CommandError("--threshold must be between 0 and 1")
        import_judge_check(options["target"], kind=Judge.Kind.NLI)
        progress = self.command_progress(options, unit="turns")
        try:
            result = nuggets_dedup(
                collection=collection,
                source_judge=self.get_judge(options["judge"]),
                target_name=options["target"],
                model=options["model"],
                threshold=options["threshold"],
                batch_size=options["batch_size"],
                exact_only=options["exact_only"],
                turn_ids=options["turns"],
                progress=progress,
            )
        except (NliError, NliJobError) as exc:
            raise CommandError(str(exc)) from None
        finally:
            progress.close()
        self.stdout.write(f"{options['target']}: {result}")
