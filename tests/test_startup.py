"""What every process pays before it does anything: Django's set-up, the URL conf (named, reversed and
resolved), the system checks every command runs first, and the management commands load without the heavy
libraries, which the code that uses them imports itself; and the tests' own password hasher stays in the
tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from django.contrib.auth.hashers import make_password
from django.urls import get_resolver

from core.lazy_views import lazy_views_in
from tests.conftest import REPO

# Each costs a third of a second or more to import (torch and transformers several seconds).
HEAVY = ("sklearn", "scipy", "matplotlib", "torch", "transformers", "openai", "ppi_py")
# Each a twentieth to a fifth of a second, which every command, worker and test subprocess paid before it
# did anything: the statistics' numpy, DRF's serializers (and the contrib.postgres fields they import),
# drf-spectacular's views, boto3 and redis. The pages and the API load them (core/lazy_views.py), the MTurk
# client loads boto3 (crowd/providers/mturk/client.py), the Redis cache redis (assay/cache.py).
AT_START_UP = (
    "numpy",
    "rest_framework.serializers",
    "django.contrib.postgres",
    "drf_spectacular.views",
    "boto3",
    "botocore",
    "redis",
)
# Of those, what no command's own module imports either: the commands that read labels load numpy, DRF's
# schema commands its serializers and the fake MTurk server botocore's service model, because they use
# them; none talks to MTurk or Redis before it runs.
IN_NO_COMMAND = ("boto3", "redis")

LOAD_EVERYTHING = """
import json, sys
import django
django.setup()
from django.core import checks
from django.core.management import get_commands, load_command_class
from django.urls import resolve, reverse
heavy = sys.argv[1:]
def loaded():
    return sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy))
resolve("/")
reverse("home")
started = loaded()
checks.run_checks()
checked = loaded()
for name, app in sorted(get_commands().items()):
    load_command_class(app, name)
print(json.dumps({"started": started, "checked": checked, "commands": loaded()}))
"""


def _load_everything() -> dict[str, list[str]]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "assay.settings",
        "SECRET_KEY": "startup-test-" + "k" * 40,
        # A Redis cache, as in production: the caches' system check makes it, and making it imports nothing.
        "CACHE_URL": "redis://127.0.0.1:9/0",
    }
    done = subprocess.run(
        [sys.executable, "-c", LOAD_EVERYTHING, *HEAVY, *AT_START_UP],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_start_up_the_url_conf_the_system_checks_and_every_command_load_without_the_heavy_libraries():
    loaded = _load_everything()

    assert loaded["started"] == []
    assert loaded["checked"] == []
    assert [m for m in loaded["commands"] if m.split(".")[0] in HEAVY + IN_NO_COMMAND] == []


def test_every_view_the_url_conf_names_exists():
    # The URL conf names its views without importing them, so a misspelt name fails here, not at start-up.
    views = list(lazy_views_in(get_resolver().url_patterns))
    wrong = []
    for view in views:
        try:
            view.load()
        except Exception as exc:
            wrong.append(f"{view!r}: {exc}")

    assert len(views) > 100
    assert wrong == []


def test_the_tests_hash_passwords_fast_and_the_settings_module_keeps_djangos_default():
    assert make_password("pw").startswith("md5$")
    import assay.settings

    assert not hasattr(assay.settings, "PASSWORD_HASHERS")
