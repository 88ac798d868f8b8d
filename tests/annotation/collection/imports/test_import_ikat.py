import functools
import http.server
import threading

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Collection, RelevanceJudgment

pytestmark = pytest.mark.django_db


def test_it_loads_ikat_2023_from_a_folder(shared_data):
    call_command("import_ikat", year="2023", source=str(shared_data / "ikat2023"))
    collection = Collection.objects.get(name="ikat2023")
    assert (collection.topics.count(), collection.turns.count(), collection.passages.count()) == (
        25,
        332,
        700,
    )


def test_it_loads_ikat_2024_with_qrels_from_a_url(shared_data):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(shared_data / "ikat2024"))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        call_command("import_ikat", year="2024", source=f"http://127.0.0.1:{server.server_port}/")
    finally:
        server.shutdown()
    collection = Collection.objects.get(name="ikat2024")
    assert (collection.topics.count(), collection.turns.count()) == (17, 218)
    assert RelevanceJudgment.objects.filter(judge__name="nist-qrels").count() == 20575


def test_it_says_which_file_is_missing(tmp_path):
    with pytest.raises(CommandError, match="2024_test_topics.json is not in"):
        call_command("import_ikat", year="2024", source=str(tmp_path))


def test_it_refuses_a_collection_name_that_is_not_a_slug(shared_data):
    with pytest.raises(CommandError, match="'iKAT 2023' is not a slug"):
        call_command("import_ikat", year="2023", source=str(shared_data / "ikat2023"), collection="iKAT 2023")
    assert not Collection.objects.exists()
