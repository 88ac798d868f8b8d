from django.core.management.base import CommandError
from django.db import transaction

from annotation.commands import CollectionCommand
from annotation.models import Condition
from annotation.support.services import SupportConflict, SupportSwitchUnconfirmed, support_assignment_set
from core.commands import user_named
from core.wording import plural


class Command(CollectionCommand):
    help = (
        "Choose the condition an assessor judges topics' support units in: from scratch, or post-editing a "
        "machine judge's labels. Refused for a topic the assessor already judged in the other condition."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--assessor", required=True, help="Username of the assessor.")
        parser.add_argument(
            "--condition",
            required=True,
            choices=[Condition.SCRATCH, Condition.POST_EDIT],
        )
        parser.add_argument(
            "--topic", action="append", help="Topic number (repeatable; default: every topic)."
        )
        parser.add_argument("--machine-judge", help="Post-editing: the judge whose labels are shown.")
        parser.add_argument(
            "--max-citations", type=int, help="Judge up to the first N citations (default 1)."
        )
        parser.add_argument(
            "--switch",
            action="store_true",
            help="Switch topics the assessor already has in the other condition (refused without it, and "
            "always once they judged a unit of the topic).",
        )

    def handle(
        self, *args, collection, assessor, condition, topic, machine_judge, max_citations, switch, **options
    ):
        target = self.get_collection(collection)
        user = user_named(assessor)
        judge = self.get_judge(machine_judge) if machine_judge else None
        topics = target.topics.all()
        if topic:
            topics = topics.filter(number__in=topic)
            missing = set(topic) - set(topics.values_list("number", flat=True))
            if missing:
                raise CommandError(f"no topic {', '.join(sorted(missing))} in collection {collection}")
        try:
            with transaction.atomic():
                assignments = [
                    support_assignment_set(
                        topic=t,
                        user=user,
                        condition=condition,
                        machine_judge=judge,
                        max_citations=max_citations,
                        switch=switch,
                    )
                    for t in topics
                ]
        except SupportSwitchUnconfirmed as exc:
            raise CommandError(f"nothing was assigned: {exc} (--switch)") from None
        except SupportConflict as exc:
            raise CommandError(f"nothing was assigned: {exc}") from None
        self.stdout.write(f"{plural(len(assignments), 'topic')} assigned to {assessor} ({condition})")
