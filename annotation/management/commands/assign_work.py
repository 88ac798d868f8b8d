"""Hand a pool's turns to assessors as leased units of work."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError, CommandParser

from annotation.commands import CollectionCommand
from annotation.models import Assignment, GoldPair
from annotation.relevance.assignments import AssignmentFailed, assignment_create
from core.commands import active_users, named
from core.names import known_names
from core.wording import plural


class Command(CollectionCommand):
    help = (
        "Assign a pool's turns (--unit turn) or whole conversations (--unit conversation) to assessors. "
        "Each unit is judged by --redundancy different assessors; an assessor holds a unit under a lease of "
        "--lease-minutes, after which an unfinished unit goes to the next assessor who asks."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--pool", required=True, help="Name of the pool in the collection.")
        parser.add_argument("--name", required=True, help="Name of the new assignment.")
        parser.add_argument("--assessors", nargs="+", required=True, metavar="USERNAME")
        parser.add_argument("--unit", choices=Assignment.UnitKind.values, default=Assignment.UnitKind.TURN)
        parser.add_argument("--redundancy", type=int, default=1, help="Assessors per unit (default 1).")
        parser.add_argument("--lease-minutes", type=int, default=60)
        parser.add_argument("--turns", nargs="+", metavar="TURN", help="Only these turns of the pool.")
        parser.add_argument("--turns-file", help="File of turn ids, one per line.")
        parser.add_argument("--no-ptkb", action="store_true", help="Skip the PTKB statement step.")
        parser.add_argument(
            "--gold-judge",
            metavar="JUDGE",
            help="Plant gold: pairs this reference judge graded (e.g. nist-qrels), shown among the assessors' own.",
        )
        parser.add_argument(
            "--gold-share",
            type=float,
            metavar="SHARE",
            help="Share of gold among the pairs an assessor grades (e.g. 0.05); needs --gold-judge.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        collection = self.get_collection(options["collection"])
        pool = named(collection.pools.all(), options["pool"], kind="pool", where=f" in {collection.name}")
        users = {
            u.get_username(): u for u in get_user_model().objects.filter(username__in=options["assessors"])
        }
        missing = [name for name in options["assessors"] if name not in users]
        if missing:
            known = known_names(active_users(), kind="user", field="username")
            raise CommandError(f"no such users: {', '.join(missing)}; {known}")
        gold_judge = self.get_judge(options["gold_judge"]) if options["gold_judge"] else None
        if gold_judge is not None and options["gold_share"] is None:
            raise CommandError("--gold-judge needs --gold-share (e.g. 0.05)")
        if gold_judge is None and options["gold_share"] is not None:
            raise CommandError("--gold-share needs --gold-judge")
        turn_ids: list[str] | None = options["turns"]
        if options["turns_file"]:
            try:
                turn_ids = (turn_ids or []) + Path(options["turns_file"]).read_text(encoding="utf-8").split()
            except OSError as exc:
                raise CommandError(f"cannot read {options['turns_file']}: {exc.strerror}") from None
        try:
            assignment = assignment_create(
                pool=pool,
                name=options["name"],
                assessors=users.values(),
                unit_kind=options["unit"],
                redundancy=options["redundancy"],
                lease_minutes=options["lease_minutes"],
                turn_ids=turn_ids,
                with_ptkb=not options["no_ptkb"],
                gold_judge=gold_judge,
                gold_share=options["gold_share"],
            )
        except AssignmentFailed as exc:
            raise CommandError(str(exc)) from None
        units = assignment.units.count()
        gold = GoldPair.objects.filter(unit__assignment=assignment).count()
        planted = f", {plural(gold, 'gold pair')} from {gold_judge.name}" if gold_judge is not None else ""
        self.stdout.write(
            self.style.SUCCESS(
                f"assignment {assignment.name}: {plural(units, f'{assignment.unit_kind} unit')} x "
                f"{assignment.redundancy} to {plural(len(users), 'assessor')}, leases of {assignment.lease_minutes} min"
                f"{planted}"
            )
        )
