"""nli_match: NtN matching of response nuggets against gold nuggets by an NLI model."""

from __future__ import annotations

from django.core.management.base import CommandError, CommandParser

from annotation.commands import CollectionCommand, import_judge_check
from annotation.models import Judge
from judging.clients.nli import NliError
from judging.machine.nli import NliJobError, ntn_match


class Command(CollectionCommand):
    help = (
        "Score every (response nugget, gold nugget) pair of each turn with an NLI model (premise: the "
        "response nugget, hypothesis: the gold nugget) and store NtnJudgment rows of an NLI judge "
        "(--judge, created with kind 'nli' and the model name). entails = P(entailment) >= --threshold "
        "(default settings.NLI_THRESHOLD); the probability is kept in `score`. Pairs the judge already "
        "scored are skipped, so a killed run resumes. The model is a local directory or a hub id "
        "(default settings.NLI_MODEL)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--gold-judge", required=True, help="Judge whose nuggets are the gold set.")
        parser.add_argument(
            "--response-nugget-judge",
            required=True,
            help="Judge whose nuggets were extracted from responses.",
        )
        parser.add_argument("--judge", required=True, help="Name of the NLI judge to record the matches.")
        parser.add_argument("--model", help="NLI model directory or hub id (default: settings.NLI_MODEL).")
        parser.add_argument("--threshold", type=float, help="Entailment probability threshold (0-1).")
        parser.add_argument(
            "--batch-size", type=int, help="Pairs per forward pass (default: NLI_BATCH_SIZE)."
        )
        parser.add_argument("--runs", nargs="+", metavar="RUN", help="Only nuggets of these runs' responses.")
        parser.add_argument("--turns", nargs="+", metavar="TURN", help="Only these turn ids.")

    def handle(self, *args, **options):
        collection = self.get_collection(options["collection"])
        if options["threshold"] is not None and not 0 <= options["threshold"] <= 1:
            raise CommandError("--threshold must be between 0 and 1")
        if options["batch_size"] is not None and options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1")
        import_judge_check(options["judge"], kind=Judge.Kind.NLI)
        progress = self.command_progress(options, unit="turns")
        try:
            result = ntn_match(
                collection=collection,
                gold_judge=self.get_judge(options["gold_judge"]),
                response_nugget_judge=self.get_judge(options["response_nugget_judge"]),
                judge_name=options["judge"],
                model=options["model"],
                threshold=options["threshold"],
                batch_size=options["batch_size"],
                runs=options["runs"],
                turn_ids=options["turns"],
                progress=progress,
            )
        except (NliError, NliJobError) as exc:
            raise CommandError(str(exc)) from None
        finally:
            progress.close()
        self.stdout.write(f"{options['judge']}: {result}")
