"""What every process pays before it does anything: the URL conf and the management commands load without
the heavy numeric and model libraries, which the code that uses them imports itself; and the tests' own
password hasher stays in the tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from django.contrib.auth.hashers import make_password

from tests.conftest import REPO

# Each costs a third of a second or more to import (torch and transformers several seconds).
HEAVY = ("sklearn", "scipy", "matplotlib", "torch", "transformers", "openai", "ppi_py")

LOAD_EVERYTHING = """
import json, sys
import django
django.setup()
from django.core.management import get_commands, load_command_class
from django.urls import resolve
resolve("/")
for name, app in sorted(get_commands().items()):
    load_command_class(app, name)
heavy = set(sys.argv[1:])
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in heavy)))
"""


def test_the_url_conf_and_every_command_load_without_the_heavy_libraries():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "assay.settings", "SECRET_KEY": "startup-test-" + "k" * 40}
    done = subprocess.run(
        [sys.executable, "-c", LOAD_EVERYTHING, *HEAVY],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_the_tests_hash_passwords_fast_and_the_settings_module_keeps_djangos_default():
    assert make_password("pw").startswith("md5$")
    import assay.settings

    assert not hasattr(assay.settings, "PASSWORD_HASHERS")
