"""`nugget_scores`: the TREC RAG nugget scores of every answer and run under one judge's assignments."""

from __future__ import annotations

import json
from collections import Counter

from django.core.management.base import CommandError, CommandParser

from annotation.commands import CollectionCommand
from annotation.rag_nuggets.importance import IMPORTANCE_DEFAULT
from core.wording import plural
from judging.measures.rag_nuggets import NuggetScores, vital_unlabelled
from judging.scores.rag_nuggets import ANSWERED_ONLY_NOTE, nugget_scores, nugget_scores_text


class Command(CollectionCommand):
    help = (
        "The four nuggetizer scores (strict_vital_score, strict_all_score, vital_score, all_score) of every "
        "answer of the runs the judge assigned nuggets to, and per run their mean over the topics of the nugget "
        "set (a topic with an empty list, or one the run skipped, scores 0, as in nuggetizer's pipeline; "
        "--answered-only averages over the answers that have labels). --format json gives "
        '{"runs": {run_id: {...}}, "answers": [...]}; --format nuggetizer writes the per-answer scores file '
        'nuggetizer\'s calculate_metrics writes (one run with --run), ending in the mean under qid "all".'
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--judge", required=True, help="Judge whose nugget assignments are scored.")
        parser.add_argument(
            "--importance-judge",
            help=f"Judge whose vital/okay labels count (default: {IMPORTANCE_DEFAULT}).",
        )
        parser.add_argument("--nuggets-judge", help="Only the nuggets of this judge's lists.")
        parser.add_argument(
            "--answered-only",
            action="store_true",
            help="Average each run over the answers that have labels only (not nuggetizer's way).",
        )
        parser.add_argument(
            "--run", help="Only this run's answers (--format nuggetizer, as nuggetizer scores a run file)."
        )
        parser.add_argument("--format", choices=["text", "json", "nuggetizer"], default="text")
        parser.add_argument("--output", "-o", help="File to write (default: standard output).")

    def handle(
        self,
        *args,
        collection,
        judge,
        importance_judge,
        nuggets_judge,
        answered_only,
        run,
        format,
        output,
        **options,
    ):
        scores = nugget_scores(
            collection=self.get_collection(collection),
            judge=self.get_judge(judge),
            importance_judge=self.get_judge(importance_judge) if importance_judge else None,
            nuggets_judge=self.get_judge(nuggets_judge) if nuggets_judge else None,
            answered_only=answered_only,
        )
        answers = [a for a in scores["answers"] if run is None or a["run_id"] == run]
        if run is not None:
            scores = {
                **scores,
                "runs": {k: v for k, v in scores["runs"].items() if k == run},
                "answers": answers,
            }
        if not answers:
            whose = f"run {run}'s " if run else ""
            raise CommandError(f"judge {judge} has assigned no nuggets to {whose}answers in {collection}")
        warning = _importance_warning(scores, importance_judge)
        if warning:
            self.stderr.write(f"warning: {warning}")
        if answered_only:
            self.stderr.write(f"note: {ANSWERED_ONLY_NOTE}")
        no_vital = vital_unlabelled(scores)
        if format == "json":
            text = json.dumps({**scores, "importance_warning": warning}, indent=2) + "\n"
        elif format == "nuggetizer":
            text = nugget_scores_text(answers)
        else:
            lines = [
                f"{'run':<30} {'strict vital':>12} {'strict all':>10} {'vital':>7} {'all':>7} {'topics':>6}"
            ]
            topics_of = Counter(a["run_id"] for a in answers)
            for name, values in sorted(scores["runs"].items(), key=lambda item: -item[1]["all_score"]):
                topics = topics_of[name]
                # With no vital/okay label at all the vital scores measure nothing: not shown as 0.
                strict_vital = "n/a" if no_vital else f"{values['strict_vital_score']:.4f}"
                vital = "n/a" if no_vital else f"{values['vital_score']:.4f}"
                lines.append(
                    f"{name:<30} {strict_vital:>12} {values['strict_all_score']:10.4f} "
                    f"{vital:>7} {values['all_score']:7.4f} {topics:>6}"
                )
            text = "\n".join(lines) + "\n"
        if output:
            with open(output, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
        else:
            self.stdout.write(text, ending="")


def _importance_warning(scores: NuggetScores, importance_judge: str | None) -> str:
    """What the vital scores lack: nuggets without a vital/okay label count as okay, as in nuggetizer."""
    missing, total = scores["unlabelled_nuggets"], scores["nuggets"]
    if not missing:
        return ""
    whose = f"judge {importance_judge}" if importance_judge else "the assignment judge or their own judge"
    if missing == total:
        return (
            f"none of the {plural(total, 'nugget')} scored has a vital/okay label from {whose}, so the vital scores "
            "measure nothing (text: n/a; json and nuggetizer: 0, as nuggetizer counts them); "
            "name the judge that labelled them with --importance-judge"
        )
    return f"{plural(missing, 'nugget')} of {total} scored {'has' if missing == 1 else 'have'} no vital/okay label from {whose} and count as okay"
