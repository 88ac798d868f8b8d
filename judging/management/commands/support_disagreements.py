import json

from django.core.management.base import CommandError

from annotation.commands import CollectionCommand
from annotation.models import Judge
from annotation.support.disagreements import support_disagreements_assign
from annotation.support.services import SupportConflict
from core.commands import user_named
from core.wording import plural
from judging.scores.support import support_disagreement_report


class Command(CollectionCommand):
    help = (
        "Disagreement study: sample k human/LLM support disagreements per topic (seeded) and assign them to an "
        "independent assessor blind to both labels; with --report, say how often and with what Cohen's kappa "
        "the independent assessor agrees with the human and with the LLM, per human condition."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument(
            "--human", action="extend", nargs="+", required=True, help="Human judge name(s); repeatable."
        )
        parser.add_argument("--llm", required=True, help="The machine judge's name.")
        parser.add_argument("--assessor", required=True, help="Username of the independent assessor.")
        parser.add_argument("-k", type=int, default=15, help="Disagreements sampled per topic (default 15).")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--report", action="store_true", help="Report agreement instead of sampling.")
        parser.add_argument("--format", choices=["text", "json"], default="text")

    def handle(self, *args, collection, human, llm, assessor, k, seed, report, format, **options):
        target = self.get_collection(collection)
        humans: list[Judge] = [self.get_judge(name) for name in human]
        machine = self.get_judge(llm)
        user = user_named(assessor)
        if report:
            blind = Judge.objects.filter(user=user).first()
            if blind is None:
                raise CommandError(f"{assessor} has not labelled anything yet")
            reports = support_disagreement_report(
                collection=target, human_judges=humans, machine_judge=machine, blind_judge=blind
            )
            if format == "json":
                self.stdout.write(json.dumps({c: r.as_dict() for c, r in reports.items()}, indent=2))
                return
            for condition, r in reports.items():
                data = r.as_dict()
                h, m = data["agrees_with_human"], data["agrees_with_machine"]
                self.stdout.write(
                    f"{condition:<10} units {r.units:>4}  human: {h['agree']} ({_fmt(h['rate'])}, kappa {_fmt(h['kappa'])})"
                    f"  llm: {m['agree']} ({_fmt(m['rate'])}, kappa {_fmt(m['kappa'])})  neither: {r.neither}"
                )
            return
        if k < 1:
            raise CommandError("-k must be at least 1")
        try:
            assignments = support_disagreements_assign(
                collection=target, human_judges=humans, machine_judge=machine, assessor=user, k=k, seed=seed
            )
        except SupportConflict as exc:
            raise CommandError(f"nothing was assigned: {exc}") from None
        units = sum(len(a.units) for a in assignments)
        self.stdout.write(
            f"{plural(units, 'disagreement')} in {plural(len(assignments), 'topic')} assigned blind to {assessor}"
        )


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"
