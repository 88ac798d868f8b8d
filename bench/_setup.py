"""Shared set-up for benchmarks: a throwaway SQLite database, migrated, before Django loads."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def django_with_temp_sqlite() -> Path:
    """Point Django at a fresh SQLite file in a temp folder, set it up and migrate; returns the folder."""
    scratch = Path(tempfile.mkdtemp(prefix="assay-bench-"))
    os.environ["DATABASE_URL"] = f"sqlite:///{scratch / 'bench.sqlite3'}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "assay.settings")
    sys.path.insert(0, str(ROOT))
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    return scratch
