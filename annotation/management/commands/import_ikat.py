import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotation.collection.io import passages_import, topics_import
from annotation.commands import check_collection_name, import_judge_check
from annotation.formats.base import ImportFailed
from annotation.relevance.io import qrels_import
from annotation.services import collection_get_or_create, judge_get_or_create
from core.wording import plural

PUBLISHED = "https://raw.githubusercontent.com/irlabamsterdam/iKAT/main/{year}/data/"
FILES = {
    "2023": {"topics": "2023_test_topics.json", "passages": "2023_test_topics_psg_text.jsonl"},
    "2024": {"topics": "2024_test_topics.json", "qrels": "2024_test_qrels.trec"},
}


class Command(BaseCommand):
    help = (
        "Load the public TREC iKAT test topics (and the 2023 provenance passages, and the 2024 qrels when the "
        "source holds them) from a folder or a base URL; by default from the files the iKAT organisers publish "
        "on GitHub. Everything goes in one transaction."
    )

    def add_arguments(self, parser):
        parser.add_argument("--year", choices=sorted(FILES), required=True)
        parser.add_argument(
            "--from", dest="source", help="Folder or base URL holding the files (default: GitHub)."
        )
        parser.add_argument("--collection", help="Collection name (default: ikat<year>).")
        parser.add_argument(
            "--qrels-judge", default="nist-qrels", help="Judge for the 2024 qrels, if loaded."
        )

    def handle(self, *args, year, source, collection, qrels_judge, **options):
        source = source or PUBLISHED.format(year=year)
        name = check_collection_name(collection or f"ikat{year}")
        import_judge_check(qrels_judge)
        with tempfile.TemporaryDirectory() as scratch:
            paths = {
                kind: self._fetch(source, filename, Path(scratch)) for kind, filename in FILES[year].items()
            }
            if paths["topics"] is None:
                raise CommandError(f"{FILES[year]['topics']} is not in {source}")
            try:
                with transaction.atomic():
                    target = collection_get_or_create(name=name, description=f"TREC iKAT {year} test topics")
                    self.stdout.write(f"topics: {topics_import(path=paths['topics'], collection=target)}")
                    if passages := paths.get("passages"):
                        self.stdout.write(f"passages: {passages_import(path=passages, collection=target)}")
                    if qrels := paths.get("qrels"):
                        judge = judge_get_or_create(
                            name=qrels_judge, description=f"official iKAT {year} qrels"
                        )
                        result = qrels_import(path=qrels, collection=target, judge=judge)
                        self.stdout.write(f"qrels ({qrels_judge}): {result}")
            except ImportFailed as exc:
                raise CommandError(f"nothing was imported:\n{exc}") from None
        self.stdout.write(
            f"collection {name}: {plural(target.topics.count(), 'topic')}, {plural(target.turns.count(), 'turn')}"
        )

    def _fetch(self, source: str, filename: str, scratch: Path) -> Path | None:
        """The file from a folder as it is, or downloaded from a URL; None when the source lacks it."""
        if "://" not in source:
            path = Path(source) / filename
            return path if path.is_file() else None
        url = source.rstrip("/") + "/" + filename
        target = scratch / filename
        try:
            with urllib.request.urlopen(url, timeout=60) as response, open(target, "wb") as out:
                out.write(response.read())
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise CommandError(f"{url}: HTTP {exc.code}") from None
        except urllib.error.URLError as exc:
            raise CommandError(f"{url}: {exc.reason}") from None
        return target
