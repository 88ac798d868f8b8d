from django.core.management.base import BaseCommand

from annotation.demo import DEMO_ACCOUNTS, demo_load
from core.wording import plural


class Command(BaseCommand):
    help = (
        "Load the demo collection (two conversations with PTKB, 40 passages, three runs with rankings and cited "
        "answers, organiser qrels, gold nuggets) and the demo accounts. Safe to run again: nothing is duplicated."
    )

    def handle(self, *args, **options):
        collection = demo_load()
        self.stdout.write(
            f"demo collection '{collection.name}': {plural(collection.topics.count(), 'conversation')}, "
            f"{plural(collection.turns.count(), 'turn')}, {plural(collection.passages.count(), 'passage')}, "
            f"{plural(collection.runs.count(), 'run')}"
        )
        for account in DEMO_ACCOUNTS:
            role = "organiser" if account.organiser else "assessor"
            self.stdout.write(f"  {role:9} {account.username} / {account.password}")
