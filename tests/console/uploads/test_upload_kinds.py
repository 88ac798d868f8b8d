"""The console's kinds of upload: its own (the collection's files, crowd's CONE-RAG files) and every label
family's file as its package declares it, each with an importer."""

from annotation.families import FILE_KINDS
from console.models import ImportJob, upload_kinds
from console.uploads.forms import REQUIRED, UPLOAD_OPTIONS
from console.uploads.importers import IMPORTERS


def test_it_takes_its_own_files_and_the_declared_ones_and_no_other():
    declared = {kind: file.upload_title for kind, file in FILE_KINDS.items()}

    assert dict(upload_kinds()) == {**dict(ImportJob.Kind.choices), **declared}


def test_it_stores_the_kinds_it_stored_before_the_families_declared_them():
    # ImportJob.kind holds these values in existing databases: a family's file keeps its kind.
    assert [kind for kind, _ in upload_kinds()] == [
        "topics",
        "passages",
        "run",
        "qrels",
        "ptkb-qrels",
        "nuggets",
        "gold-responses",
        "support-labels",
        "nuggetizer-nuggets",
        "nugget-assignments",
        "cone-rag-responses",
        "cone-rag-labels",
    ]


def test_every_kind_has_an_importer_and_its_options():
    kinds = {kind for kind, _ in upload_kinds()}

    assert set(IMPORTERS) == kinds
    assert set(UPLOAD_OPTIONS) == kinds
    assert all(REQUIRED[kind] == ("judge",) for kind in FILE_KINDS)


def test_a_family_file_reads_the_judges_options_and_its_own():
    assert UPLOAD_OPTIONS["qrels"] == (
        "judge",
        "judge_kind",
        "model",
        "prompt_version",
        "replace",
        "require_passages",
    )
