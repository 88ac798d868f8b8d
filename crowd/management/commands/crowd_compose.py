from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from annotation.models import Collection, Judge
from core.commands import named
from core.wording import plural
from crowd.campaigns.services import campaign_compose
from crowd.management.commands._crowd import CampaignCommand
from crowd.models import CrowdCampaign


def _names(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


class Command(CampaignCommand):
    help = (
        "Create a crowd nugget-matching campaign over chosen turns x runs' responses x the turn's gold nuggets, "
        "optionally generate test questions with obvious answers, and compose its batches (seeded, so the same "
        "seed gives the same batches). --kind nugget-support asks TREC RAG's three-way question (support / "
        "partial support / not support) about each (answer, nugget) pair instead of yes/no, with three-way test "
        "questions."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--collection", required=True, help="Name of the collection the campaign labels.")
        parser.add_argument("--nugget-judge", required=True, help="Judge whose gold nuggets are matched.")
        parser.add_argument("--turns", default="all", help="Comma-separated turn ids, or 'all'.")
        parser.add_argument("--runs", default="all", help="Comma-separated run names, or 'all'.")
        parser.add_argument(
            "--provider",
            choices=[p.value for p in CrowdCampaign.Provider],
            default="platform",
            help="platform: workers answer in Assay (accounts or crowd_links); mturk: publish with mturk_publish.",
        )
        parser.add_argument(
            "--label-judge",
            default=None,
            help="Crowd judge the labels are stored as (default: crowd-majority for platform, "
            "mturk-majority for mturk).",
        )
        parser.add_argument(
            "--seed", type=int, default=0, help="Shuffle seed: the same seed and data give the same batches."
        )
        parser.add_argument(
            "--batch-size", type=int, default=10, help="Response-nugget pairs per batch (HIT)."
        )
        parser.add_argument(
            "--tests-per-batch",
            type=int,
            default=1,
            help="Test questions per batch, at seeded random positions; the pool needs a yes and a no question "
            "(written by organisers in the admin, or --generate-tests).",
        )
        parser.add_argument("--assignments", type=int, default=3, help="Workers per batch.")
        parser.add_argument(
            "--kind",
            choices=CrowdCampaign.Kind.values,
            default=CrowdCampaign.Kind.NTR,
            help="ntr: yes/no nugget matching (CONE-RAG); nugget-support: three-way nugget assignment (TREC RAG).",
        )
        parser.add_argument("--reward", default="0.50", help="Reward per HIT in USD.")
        parser.add_argument(
            "--keep-duplicates", action="store_true", help="Also match nuggets marked duplicate."
        )
        parser.add_argument(
            "--generate-tests",
            type=int,
            default=0,
            help="Generate this many test questions from the nuggets.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        collection = named(Collection.objects.all(), options["collection"], kind="collection")
        nugget_judge = named(Judge.objects.all(), options["nugget_judge"], kind="judge")
        turns = collection.turns.all()
        if options["turns"] != "all":
            wanted = _names(options["turns"])
            turns = turns.filter(turn_id__in=wanted)
            if turns.count() != len(set(wanted)):
                raise CommandError(
                    f"unknown turns: {sorted(set(wanted) - set(turns.values_list('turn_id', flat=True)))}"
                )
        runs = collection.runs.all()
        if options["runs"] != "all":
            wanted = _names(options["runs"])
            runs = runs.filter(name__in=wanted)
            if runs.count() != len(set(wanted)):
                raise CommandError(
                    f"unknown runs: {sorted(set(wanted) - set(runs.values_list('name', flat=True)))}"
                )

        def compose() -> list:
            _campaign, batches = campaign_compose(
                collection=collection,
                name=options["campaign"],
                nugget_judge=nugget_judge,
                turns=turns,
                runs=runs,
                generate_tests=options["generate_tests"],
                provider=options["provider"],
                kind=options["kind"],
                label_judge_name=options["label_judge"],
                seed=options["seed"],
                batch_size=options["batch_size"],
                tests_per_batch=options["tests_per_batch"],
                assignments_per_batch=options["assignments"],
                skip_duplicates=not options["keep_duplicates"],
                reward=options["reward"],
            )
            return batches

        batches = self.run(compose)
        self.stdout.write(f"campaign {options['campaign']}: {plural(len(batches), 'batch')}")
