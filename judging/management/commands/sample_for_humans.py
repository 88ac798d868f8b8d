"""sample_for_humans: draw the units people judge next, store their probabilities, hand them out."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError, CommandParser

from annotation.models import Pool
from core.wording import plural
from judging.hybrid.cli import HybridCommand
from judging.hybrid.services import HybridError, WorkSpec, human_sample_create
from judging.measures.hybrid.sampling import STRATEGIES


class Command(HybridCommand):
    help = (
        "Draw --budget units for people to judge from the units the machine judge labelled: turns (every "
        "task) or (turn, passage) pairs (relevance, --unit pair). uniform draws exactly --budget units; "
        "uncertainty draws each unit on its own with a probability proportional to the expected size of "
        "the human-machine correction (the disagreement of --confidence-judges with the machine judge; else "
        "the mean squared human-machine difference of --pilot-judges' labels at the unit's machine value; else "
        "the machine's own values), mixed with a uniform floor, --budget units on average; simulate_budget "
        "says whether it pays on the collection. Each unit's inclusion probability is stored under --name, and the work "
        "is created: a relevance assignment (of the sampled turns of --pool, or of a new pool of the "
        "sampled pairs), support assignments of the sampled topics, or a crowd NtR campaign."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        self.add_table_arguments(parser, human=False)
        parser.add_argument(
            "--budget", type=int, required=True, help="Units to draw (expected, for uncertainty)."
        )
        parser.add_argument("--strategy", default="uniform", help=f"One of {', '.join(STRATEGIES)}.")
        parser.add_argument(
            "--design",
            choices=["default", "stratified", "two-stage"],
            default="default",
            help="stratified (with --task relevance --unit pair): pairs drawn within strata of the machine "
            "judge's grade, exactly --budget, each pair's stratum and probability stored; Neyman "
            "allocation from --pilot, else proportional. two-stage (--unit pair, --measure nDCG@k, "
            "P@k or AP): turns drawn uniformly, then every pair some run ranks within the cutoff (AP: "
            "retrieves) in each drawn turn and, for nDCG and AP, a few of its other pairs per machine grade; about --budget pairs, each "
            "with P(turn) x P(pair | turn). Default: --strategy decides, as before.",
        )
        parser.add_argument(
            "--pilot", help="stratified: an earlier sample whose labels by --pilot-judges set the allocation."
        )
        parser.add_argument("--seed", type=int, help="Random seed, for a sample that can be drawn again.")
        parser.add_argument("--name", required=True, help="Name of the sample, and of the work created.")
        parser.add_argument(
            "--confidence-judges",
            nargs="+",
            default=[],
            metavar="JUDGE",
            help="Other machine judges whose disagreement with --machine-judge is its uncertainty.",
        )
        parser.add_argument(
            "--pilot-judges",
            nargs="+",
            default=[],
            metavar="JUDGE",
            help="uncertainty: human judges whose labels on a pilot predict the correction by machine value; "
            "stratified: the judges whose labels on --pilot set the allocation.",
        )
        parser.add_argument("--pool", help="relevance: the pool whose turns or pairs are drawn.")
        parser.add_argument("--assessors", nargs="+", default=[], metavar="USERNAME")
        parser.add_argument(
            "--condition", choices=["scratch", "post-edit"], default="scratch", help="support: the condition."
        )
        parser.add_argument(
            "--provider",
            choices=["platform", "mturk"],
            default="platform",
            help="ntr: where the crowd campaign runs (labels as crowd-majority or mturk-majority).",
        )
        parser.add_argument(
            "--tests-per-batch",
            type=int,
            default=1,
            help="ntr: test questions per batch; the pool needs a yes and a no question (or --generate-tests).",
        )
        parser.add_argument(
            "--generate-tests", type=int, default=0, help="ntr: generate this many test questions first."
        )
        parser.add_argument("--no-work", action="store_true", help="Store the sample only, create no work.")
        parser.add_argument("--format", choices=["text", "json"], default="text")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["design"] in ("stratified", "two-stage"):
            options["strategy"] = options["design"]
        elif options["strategy"] not in STRATEGIES:
            raise CommandError(
                f"--strategy must be one of {', '.join(STRATEGIES)}, not {options['strategy']!r}"
            )
        if options["budget"] < 1:
            raise CommandError("--budget must be at least 1")
        collection = self.get_collection(options["collection"])
        pool = None
        if options["pool"]:
            pool = Pool.objects.filter(collection=collection, name=options["pool"]).first()
            if pool is None:
                known = ", ".join(Pool.objects.filter(collection=collection).values_list("name", flat=True))
                raise CommandError(
                    f"no pool {options['pool']!r} in {collection.name}; pools: {known or 'none'}"
                )
        users = list(get_user_model().objects.filter(username__in=options["assessors"]))
        unknown = set(options["assessors"]) - {u.get_username() for u in users}
        if unknown:
            raise CommandError(f"no user named {', '.join(sorted(unknown))}")
        work = WorkSpec(
            assessors=users,
            pool=pool,
            support_condition=options["condition"],
            gold_judge=self.get_judge(options["gold_judge"]) if options["gold_judge"] else None,
            create_work=not options["no_work"],
            crowd_provider=options["provider"],
            tests_per_batch=options["tests_per_batch"],
            generate_tests=options["generate_tests"],
        )
        try:
            sample = human_sample_create(
                collection=collection,
                name=options["name"],
                task=options["task"],
                machine_judge=self.get_judge(options["machine_judge"]),
                budget=options["budget"],
                strategy=options["strategy"],
                seed=options["seed"],
                unit=options["unit"],
                measure=options["measure"],
                rel_threshold=options["rel_threshold"],
                confidence_judges=[self.get_judge(n) for n in options["confidence_judges"]],
                pilot_judges=[self.get_judge(n) for n in options["pilot_judges"]],
                work=work,
                pilot=self.sample(collection, options["pilot"]),
            )
        except HybridError as exc:
            raise CommandError(str(exc)) from None
        drawn = sample.units.count()
        if options["format"] == "json":
            payload = {
                "sample": sample.name,
                "strategy": sample.strategy,
                "unit": sample.unit,
                "population": sample.population,
                "drawn": drawn,
                "work": sample.work,
                "units": [
                    {"key": k, "inclusion_probability": p, "stratum": st}
                    for k, p, st in sample.units.values_list("key", "inclusion_probability", "stratum")
                ],
            }
            self.stdout.write(json.dumps(payload, indent=2))
            return
        self.stdout.write(
            f"sample {sample.name}: {drawn} of {sample.population} {sample.unit}s drawn ({sample.strategy})\n"
            f"work: {sample.work or 'none created'}\n"
        )
        if sample.strategy == "stratified":
            counts: dict[str, int] = {}
            for stratum in sample.units.values_list("stratum", flat=True):
                counts[stratum] = counts.get(stratum, 0) + 1
            rule = (
                "Neyman allocation from the pilot"
                if options["pilot"]
                else "proportional allocation (no pilot)"
            )
            self.stdout.write(f"strata: {', '.join(f'{k}: {v}' for k, v in counts.items())}; {rule}\n")
        if sample.strategy == "two-stage":
            keys = list(sample.units.values_list("key", "stratum"))
            turns = len({k.split("\t")[0] for k, _st in keys})
            census = sum(1 for _k, st in keys if st == "census")
            self.stdout.write(
                f"turns: {turns} drawn; {plural(census, 'pair')} within some run's cutoff (census), "
                f"{len(keys) - census} others by machine grade\n"
            )
        if sample.strategy == "uncertainty":
            source = (
                "the confidence judges' disagreement"
                if options["confidence_judges"]
                else "the pilot's corrections by machine value"
                if options["pilot_judges"]
                else "the machine's own values"
            )
            self.stdout.write(
                f"probabilities: proportional to the correction expected from {source}, with a uniform floor; "
                "run simulate_budget on the collection to see whether this design is narrower than uniform "
                "PPI++ there, and use the uniform design if it is not\n"
            )
