from django.core.management.base import CommandError

from annotation.commands import CollectionCommand
from annotation.models import Condition
from annotation.rag_nuggets.selectors import STEPS
from annotation.rag_nuggets.services import NuggetWorkRefused, nugget_work_hand_out
from core.commands import user_named
from core.wording import plural


def _names(value: str | None) -> list[str]:
    return [name.strip() for name in (value or "").split(",") if name.strip()]


class Command(CollectionCommand):
    help = (
        "Hand assessors one TREC RAG nugget step of topics over a judge's nugget set: post-edit the list "
        "(edit), label its nuggets vital or okay (importance), or label each answer against its nuggets "
        "(assignment), from scratch or post-editing a machine judge's labels. All or nothing."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--step", required=True, choices=list(STEPS))
        parser.add_argument("--users", required=True, help="Usernames of the assessors, comma-separated.")
        parser.add_argument("--topics", help="Topic numbers, comma-separated (default: every topic).")
        parser.add_argument("--source-judge", required=True, help="The judge whose nugget set is worked on.")
        parser.add_argument(
            "--condition",
            choices=[Condition.SCRATCH, Condition.POST_EDIT],
            default=Condition.SCRATCH,
            help="importance and assignment: from scratch (default) or post-editing --machine-judge's labels.",
        )
        parser.add_argument("--machine-judge", help="Post-editing: the judge whose labels are shown.")

    def handle(
        self, *args, collection, step, users, topics, source_judge, condition, machine_judge, **options
    ):
        target = self.get_collection(collection)
        people = [user_named(name) for name in _names(users)]
        chosen = target.topics.order_by("number")
        wanted = _names(topics)
        if wanted:
            chosen = chosen.filter(number__in=wanted)
            missing = set(wanted) - set(chosen.values_list("number", flat=True))
            if missing:
                raise CommandError(f"no topic {', '.join(sorted(missing))} in collection {collection}")
        try:
            works = nugget_work_hand_out(
                topics=list(chosen),
                users=people,
                step=step,
                source_judge=self.get_judge(source_judge),
                condition=condition,
                machine_judge=self.get_judge(machine_judge) if machine_judge else None,
            )
        except NuggetWorkRefused as exc:
            raise CommandError(f"nothing was handed out: {exc}") from None
        self.stdout.write(
            f"{plural(len(works), 'piece')} of {step} work on {source_judge}'s nuggets handed out "
            f"({plural(len(people), 'assessor')}, {plural(len({w.topic_id for w in works}), 'topic')})"
        )
