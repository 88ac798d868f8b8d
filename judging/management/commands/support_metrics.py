import json

from django.core.management.base import CommandError

from annotation.commands import CollectionCommand
from core.wording import plural
from judging.measures.support import compare_judges, leaderboard, mean_sentences_per_answer
from judging.scores.support import support_scores


class Command(CollectionCommand):
    help = (
        "Weighted support precision and recall of every RAG run under one judge's labels (Full 1, Partial 0.5, "
        "No 0; uncited sentences count 0 in recall), per run and per topic. With --compare, Kendall's tau and "
        "Spearman's rho between the run rankings under the two judges."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--judge", required=True)
        parser.add_argument(
            "--compare", help="A second judge whose run ranking is correlated with the first."
        )
        parser.add_argument("--format", choices=["text", "json"], default="text")
        parser.add_argument("--max-citations", type=int, default=1, help="Judge up to the first N citations.")

    def handle(self, *args, collection, judge, compare, format, max_citations, **options):
        if max_citations < 1:
            raise CommandError("--max-citations must be at least 1")
        target = self.get_collection(collection)
        scores = support_scores(collection=target, judge=self.get_judge(judge), max_citations=max_citations)
        correlation = None
        if compare:
            other = support_scores(
                collection=target, judge=self.get_judge(compare), max_citations=max_citations
            )
            correlation = compare_judges(scores, other)
        if format == "json":
            payload = dict(scores)
            if correlation is not None:
                payload["correlation"] = {"judges": [judge, compare], **correlation}
            self.stdout.write(json.dumps(payload, indent=2, sort_keys=True))
            return
        if not scores["runs"]:
            self.stdout.write(f"judge {judge} has no support labels in {collection}")
            return
        self.stdout.write(
            f"{'rank':>4}  {'run':<30} {'w.prec':>7} {'w.rec':>7} {'topics':>6} {'sent/ans':>8}"
        )
        for row in leaderboard(scores):
            self.stdout.write(
                f"{row.rank:>4}  {row.run:<30} {row.weighted_precision:7.4f} {row.weighted_recall:7.4f} "
                f"{row.topics:>6} {row.mean_sentences:8.2f}"
            )
        self.stdout.write(f"mean sentences per answer: {mean_sentences_per_answer(scores):.2f}")
        if correlation is not None:
            for measure, values in correlation.items():
                self.stdout.write(
                    f"{measure} {judge} vs {compare} over {plural(values['runs'], 'run')}: "
                    f"Kendall tau {_fmt(values['kendall_tau'])}, Spearman rho {_fmt(values['spearman_rho'])}"
                )


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"
