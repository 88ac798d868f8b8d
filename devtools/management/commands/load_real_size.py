"""Build a collection of real size for trying pages and benches: `manage.py load_real_size`."""

from __future__ import annotations

import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.wording import plural
from devtools.realsize import SIZES, realsize_build

SHARED = Path(settings.BASE_DIR).parent / "shared" / "data" / "ikat2024"


class Command(BaseCommand):
    help = (
        "Build a collection of real size: the iKAT 2024 conversations (generated ones when the public files "
        "are absent), 45 runs, 3 pools, 5 machine judges, 10 assessors with work in progress, support work and "
        "2 crowd campaigns, a nugget evaluation of the answer runs; passage texts are generated. --scale N "
        "builds N times as much (--scale 10 is a TREC track's size; runs stop at 90 and assessors at 50). "
        "On a 2-core machine at load 1-2, --scale 10 took: topics 1 s, passages 12 s, ranked runs 24 s, "
        "answer runs 8 s, machine judges 26 s, pools 20 s, assessors 7 s, crowd campaigns 9 s, "
        "nugget assignments 43 s: 151 s in all (docs/performance.md)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", default="ikat-real-size", help="Name of the collection to create.")
        parser.add_argument(
            "--topics",
            type=Path,
            default=SHARED / "2024_test_topics.json",
            help="iKAT topics JSON (default: the public iKAT 2024 file beside the checkout, when present).",
        )
        parser.add_argument(
            "--qrels",
            type=Path,
            default=SHARED / "2024_test_qrels.trec",
            help="Official qrels loaded as a judge (default: the public iKAT 2024 qrels, when present).",
        )
        parser.add_argument("--seed", type=int, default=2024)
        parser.add_argument(
            "--scale",
            type=int,
            default=1,
            help="How many times today's real size (conversations past the public file's 17 are generated).",
        )
        parser.add_argument(
            "--base",
            choices=sorted(SIZES),
            default="real",
            help="The size that --scale multiplies: the real one, or a small one of the same shape for trying.",
        )

    def handle(self, *args, **options) -> None:
        topics = options["topics"] if options["topics"].is_file() else None
        qrels = options["qrels"] if options["qrels"].is_file() else None
        try:
            size = SIZES[options["base"]].scaled(options["scale"])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        if topics is None:
            self.stdout.write(
                f"{options['topics']} not found: generating {plural(size.topics, 'conversation')}"
            )
        started = time.monotonic()
        try:
            built = realsize_build(
                name=options["name"],
                size=size,
                topics_path=topics,
                qrels_path=qrels,
                seed=options["seed"],
                say=lambda message: self.stdout.write(f"  {message}"),
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        counts = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in built.counts.items())
        self.stdout.write(
            self.style.SUCCESS(
                f"Collection {built.collection.name} at scale {options['scale']}: {counts} "
                f"(built in {time.monotonic() - started:.0f} s)"
            )
        )
