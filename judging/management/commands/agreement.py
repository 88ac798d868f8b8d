"""`agreement`: how far two judges agree on a task, over the units both labelled."""

from __future__ import annotations

import json

from django.core.management.base import CommandError, CommandParser
from django.template.loader import render_to_string

from annotation.commands import CollectionCommand
from core.wording import plural
from judging.agreement.reports import (
    comparison_csv,
    comparison_report,
    comparison_text,
    confusion_heatmap,
    confusion_rows,
    data_uri,
)
from judging.agreement.selectors import TASKS, labels_by_judge, reliability_matrix, task_spec
from judging.measures.agreement import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    AgreementUndefined,
    krippendorff_alpha_multi,
)


class Command(CollectionCommand):
    help = (
        "Label-level agreement of judge A with judge B on a task (relevance, ptkb, ntr, ntn, support, "
        "nugget-importance, nugget-assignment) over the "
        "units both labelled: n, exact agreement, Cohen's kappa with a 95% bootstrap interval over topics, "
        "weighted kappas (ordinal tasks), Krippendorff's alpha, the confusion matrix (rows A, columns B) and "
        "per-topic figures. With more than two judges, Krippendorff's alpha over all of them is added."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--task", required=True, choices=list(TASKS))
        parser.add_argument(
            "--judges", nargs="+", required=True, metavar="JUDGE", help="Judge A, judge B, [more]."
        )
        parser.add_argument(
            "--binary-threshold",
            type=float,
            help="Relevance only: also compare labels binarised at grade >= T.",
        )
        parser.add_argument("--topics", nargs="+", metavar="TOPIC", help="Only these topic numbers.")
        parser.add_argument(
            "--condition",
            help="Support and nugget tasks: the human labels of this condition (scratch, post-edit; blind: "
            "support only).",
        )
        parser.add_argument(
            "--resamples", type=int, default=DEFAULT_RESAMPLES, help="Bootstrap resamples of topics."
        )
        parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="Seed of the bootstrap.")
        parser.add_argument("--format", choices=["text", "json", "csv", "html"], default="text")

    def handle(
        self,
        *args,
        collection,
        task,
        judges,
        binary_threshold,
        topics,
        condition,
        resamples,
        seed,
        format,
        **options,
    ):
        if len(judges) < 2:
            raise CommandError("--judges needs at least two judge names")
        if resamples < 1:
            raise CommandError("--resamples must be at least 1")
        target = self.get_collection(collection)
        resolved = [self.get_judge(name) for name in judges]
        try:
            report = comparison_report(
                collection=target,
                task=task,
                judge_a=resolved[0],
                judge_b=resolved[1],
                topics=topics,
                condition=condition,
                binary_threshold=binary_threshold,
                resamples=resamples,
                seed=seed,
            )
        except (AgreementUndefined, ValueError) as exc:
            raise CommandError(str(exc)) from None
        if len(resolved) > 2:
            by_judge = labels_by_judge(
                collection=target, task=task, judges=resolved, topics=topics, condition=condition
            )
            report["all_judges"] = [j.name for j in resolved]
            report["krippendorff_alpha_all_judges"] = krippendorff_alpha_multi(
                reliability_matrix(by_judge, task), task_spec(task).alpha_level
            )
        if format == "json":
            self.stdout.write(json.dumps(report, indent=2))
        elif format == "csv":
            self.stdout.write(comparison_csv(report), ending="")
        elif format == "html":
            self.stdout.write(
                render_to_string(
                    "agreement/standalone.html",
                    {
                        "report": report,
                        "confusion_rows": confusion_rows(report),
                        "heatmap": data_uri(confusion_heatmap(report, "svg")),
                    },
                )
            )
        else:
            text = comparison_text(report)
            if "krippendorff_alpha_all_judges" in report:
                value = report["krippendorff_alpha_all_judges"]
                alpha = "n/a" if value is None else f"{value:.3f}"
                text += f"\nKrippendorff's alpha over {plural(len(resolved), 'judge')}: {alpha}\n"
            self.stdout.write(text, ending="")
