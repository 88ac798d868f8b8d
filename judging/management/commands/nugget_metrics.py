"""nugget_metrics: CONE-RAG nugget recall and precision (NtN) or recall (NtR) of runs."""

from __future__ import annotations

import json

from django.core.management.base import CommandError, CommandParser

from annotation.commands import CollectionCommand
from core.wording import plural
from judging.measures.nuggets import NuggetMetricsError, NuggetMetricsReport
from judging.scores.nuggets import nugget_metrics


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


class Command(CollectionCommand):
    help = (
        "Nugget metrics of every run against a gold nugget set (--gold-judge: human, LLM, or a "
        "de-duplicated set): Recall_NtN and Precision_NtN from --response-nugget-judge and --ntn-judge, or "
        "Recall_NtR from --ntr-judge. Macro averages over turns with gold nuggets (turns without are left "
        "out; a missing response or one without nuggets scores 0; unjudged pairs count as no match), for "
        "all, personal and non-personal turns, runs ranked by recall. --format json adds per-turn scores."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--gold-judge", required=True, help="Judge whose nuggets are the gold set.")
        parser.add_argument("--response-nugget-judge", help="Judge of the nuggets extracted from responses.")
        parser.add_argument("--ntn-judge", help="Judge of the NtN (entailment) judgments.")
        parser.add_argument("--ntr-judge", help="Judge of the NtR (nugget in response) judgments.")
        parser.add_argument(
            "--ptkb-judge", help="Judge whose PTKB labels decide personal turns (default: any)."
        )
        parser.add_argument("--runs", nargs="+", metavar="RUN", help="Only these runs (default: every run).")
        parser.add_argument("--format", choices=["text", "json"], default="text")
        parser.add_argument("--per-turn", action="store_true", help="With --format text, per-turn rows too.")

    def handle(self, *args, **options):
        collection = self.get_collection(options["collection"])
        ntr, ntn, responses = options["ntr_judge"], options["ntn_judge"], options["response_nugget_judge"]
        if ntr and (ntn or responses):
            raise CommandError("give either --ntr-judge, or --response-nugget-judge with --ntn-judge")
        if not ntr and not (ntn and responses):
            raise CommandError(
                "NtN metrics need --response-nugget-judge and --ntn-judge (or give --ntr-judge)"
            )
        try:
            report = nugget_metrics(
                collection=collection,
                gold_judge=self.get_judge(options["gold_judge"]),
                response_nugget_judge=self.get_judge(responses) if responses else None,
                ntn_judge=self.get_judge(ntn) if ntn else None,
                ntr_judge=self.get_judge(ntr) if ntr else None,
                runs=options["runs"],
                ptkb_judge=self.get_judge(options["ptkb_judge"]) if options["ptkb_judge"] else None,
            )
        except NuggetMetricsError as exc:
            raise CommandError(str(exc)) from None
        if options["format"] == "json":
            self.stdout.write(json.dumps(report.as_dict(), indent=2))
        else:
            self.write_text(report, per_turn=options["per_turn"])

    def write_text(self, report: NuggetMetricsReport, *, per_turn: bool) -> None:
        kind = "NtR" if report.mode == "ntr" else "NtN"
        self.stdout.write(
            f"{report.collection}: {kind} against {report.gold_judge} (matching: {report.matching_judge}); "
            f"{plural(report.turns_with_gold, 'turn')} with gold nuggets, {report.turns_without_gold} without (left out)"
        )
        header = ["rank", "run", "R", "P", "R_pers", "P_pers", "R_nonpers", "P_nonpers", "turns", "unjudged"]
        rows = [header]
        for run in report.runs:
            rows.append(
                [
                    str(run.rank),
                    run.run,
                    _fmt(run.all.recall),
                    _fmt(run.all.precision),
                    _fmt(run.personal.recall),
                    _fmt(run.personal.precision),
                    _fmt(run.non_personal.recall),
                    _fmt(run.non_personal.precision),
                    f"{run.all.turns} ({run.personal.turns}p)",
                    str(run.unjudged),
                ]
            )
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        for row in rows:
            self.stdout.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
        if per_turn:
            for run in report.runs:
                self.stdout.write(f"\n{run.run}")
                for turn in run.turns:
                    self.stdout.write(
                        f"  {turn.turn_id:<10} {'personal' if turn.personal else '        '} gold={turn.gold} "
                        f"response_nuggets={'-' if turn.response_nuggets is None else turn.response_nuggets} "
                        f"R={_fmt(turn.recall)} P={_fmt(turn.precision)}"
                    )
