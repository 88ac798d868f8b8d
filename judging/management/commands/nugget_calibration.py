"""`nugget_calibration`: how far two TREC RAG nugget evaluations of the same runs agree, as the track
reports its calibration of automatic against manual evaluation."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError, CommandParser

from annotation.commands import CollectionCommand
from annotation.rag_nuggets.importance import IMPORTANCE_DEFAULT
from core.wording import plural
from judging.measures.rag_nuggets import SCORE_NAMES
from judging.rag_nuggets.calibration.selectors import NuggetEvaluation, nugget_calibration
from judging.rag_nuggets.selectors import DEFAULT_SCORE
from judging.scores.rag_nuggets import ANSWERED_ONLY_NOTE


def _figure(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _spread(spread: dict[str, Any] | None) -> str:
    if spread is None:
        return "n/a"
    sd = "" if spread["sd"] is None else f", sd {spread['sd']:.3f}"
    return (
        f"mean {spread['mean']:.3f}, median {spread['median']:.3f}, interquartile {spread['q1']:.3f} to "
        f"{spread['q3']:.3f}, range {spread['minimum']:.3f} to {spread['maximum']:.3f}{sd} "
        f"over {plural(spread['topics'], 'topic')}"
    )


def calibration_text(report: dict[str, Any]) -> str:
    run, topics = report["run_level"], report["per_topic"]
    ci = run["kendall_tau_ci"]
    interval = (
        f" (95% interval {ci['ci'][0]:.3f} to {ci['ci'][1]:.3f}, over {plural(ci['turns'], 'topic')})"
        if ci
        else ""
    )

    def side(name: str) -> str:
        evaluation = report[name]
        return f"{evaluation['judge']}, vital/okay {evaluation['importance_judge'] or 'default'}"

    lines = [
        f"{report['score']}: A ({side('a')}) vs B ({side('b')})",
        *([ANSWERED_ONLY_NOTE] if report["answered_only"] else []),
        f"run level: Kendall's tau-b {_figure(run['kendall_tau_b'])}{interval}, Spearman's rho "
        f"{_figure(run['spearman_rho'])} over {plural(run['n_runs'], 'run')}",
        f"per topic: tau-b {_spread(topics['kendall_tau_b'])}",
        f"per topic: Pearson's r {_spread(topics['pearson_r'])}",
        *(f"note: {note}" for note in report["notes"] + run["notes"] + topics["notes"]),
        "",
        f"{'run':<30} {'score A':>8} {'score B':>8} {'rank A':>6} {'rank B':>6}",
        *(
            f"{row['run']:<30} {row['score_a']:8.4f} {row['score_b']:8.4f} {row['rank_a']:>6} {row['rank_b']:>6}"
            for row in run["runs"]
        ),
        "",
        f"{'topic':<20} {'runs':>5} {'tau-b':>7} {'r':>7}",
        *(
            f"{row['topic']:<20} {row['runs']:>5} {_figure(row['kendall_tau_b']):>7} {_figure(row['pearson_r']):>7}"
            for row in topics["topics"]
        ),
    ]
    return "\n".join(lines) + "\n"


class Command(CollectionCommand):
    help = (
        "Compare two nugget evaluations of the collection's runs (each an assignment judge and an importance "
        "judge, e.g. fully automatic against manual): run-level Kendall's tau-b with its 95% interval from a "
        "bootstrap over topics, Spearman's rho, and per topic Kendall's tau-b and Pearson's r over the runs with "
        f"their spread. Without an importance judge a nugget's vital/okay label is {IMPORTANCE_DEFAULT}."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        for side in ("a", "b"):
            parser.add_argument(
                f"--judge-{side}", required=True, help=f"Evaluation {side.upper()}: whose nugget assignments."
            )
            parser.add_argument(
                f"--importance-judge-{side}",
                help=f"Evaluation {side.upper()}: whose vital/okay labels (default: {IMPORTANCE_DEFAULT}).",
            )
        parser.add_argument("--score", choices=SCORE_NAMES, default=DEFAULT_SCORE)
        parser.add_argument(
            "--answered-only",
            action="store_true",
            help="Average each run over the topics it answered (default: every topic the evaluation covers, 0 where unanswered).",
        )
        parser.add_argument("--seed", type=int, default=0, help="Seed of the bootstrap over topics.")
        parser.add_argument("--format", choices=["text", "json"], default="text")

    def handle(self, *args: Any, **options: Any) -> None:
        collection = self.get_collection(options["collection"])
        a, b = (
            NuggetEvaluation(
                judge=self.get_judge(options[f"judge_{side}"]),
                importance_judge=self.get_judge(options[f"importance_judge_{side}"])
                if options[f"importance_judge_{side}"]
                else None,
            )
            for side in ("a", "b")
        )
        if a == b:
            raise CommandError(
                "evaluations A and B are the same choices: change a judge or an importance judge"
            )
        report = nugget_calibration(
            collection=collection,
            a=a,
            b=b,
            score=options["score"],
            answered_only=options["answered_only"],
            seed=options["seed"],
        )
        if report["run_level"]["n_runs"] == 0:
            raise CommandError(
                f"no run of collection {collection.name} is scored under both evaluations: "
                f"{a.judge.name} and {b.judge.name} assigned nuggets to no common run"
            )
        if options["format"] == "json":
            self.stdout.write(json.dumps(report, indent=2))
        else:
            self.stdout.write(calibration_text(report), ending="")
