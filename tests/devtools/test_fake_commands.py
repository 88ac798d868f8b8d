"""The loopback fakes as `make run` starts them: `manage.py` processes on a free port, without DEBUG or a
secret key in the environment, which stop when the process that started them ends."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import openai
import pytest

from devtools.openai_server import FakeOpenAI
from tests.conftest import REPO

FAKES = ["llm_fake_server", "mturk_fake_server"]


def _bare_env() -> dict[str, str]:
    """The environment of a new terminal: no DEBUG, no SECRET_KEY (the test run sets one)."""
    return {k: v for k, v in os.environ.items() if k not in {"DEBUG", "SECRET_KEY", "DJANGO_SETTINGS_MODULE"}}


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state == "Z"  # ended, waiting for a parent to collect it


@pytest.mark.parametrize("command", FAKES)
def test_it_starts_a_fake_without_debug_or_a_secret_key(command):
    done = subprocess.run(
        [sys.executable, "manage.py", command, "--port", "0", "--seconds", "0.3"],
        cwd=REPO,
        env=_bare_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(r"listening on http://127\.0\.0\.1:\d+", done.stdout)
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("command", FAKES)
def test_it_stops_a_fake_when_the_process_that_started_it_ends(command, tmp_path):
    log = tmp_path / "fake.log"
    starter = subprocess.run(
        [
            "bash",
            "-c",
            f'"{sys.executable}" manage.py {command} --port 0 --stop-with-parent >"{log}" 2>&1 & '
            f'echo $!; for _ in $(seq 200); do grep -q "listening on" "{log}" && exit 0; sleep 0.1; done; exit 1',
        ],
        cwd=REPO,
        env=_bare_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    fake = int(starter.stdout.split()[0])
    assert starter.returncode == 0, log.read_text()[-2000:]

    deadline = time.monotonic() + 10
    while not _gone(fake) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _gone(fake), f"the fake {fake} outlived the shell that started it"


def test_a_long_running_fake_keeps_only_its_newest_requests_and_still_numbers_every_answer():
    with FakeOpenAI(keep=2) as fake:
        client = openai.OpenAI(base_url=fake.url, api_key="fake", max_retries=0)
        ids = [
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": f"q{n}"}]).id
            for n in range(5)
        ]

    assert len(set(ids)) == 5
    assert fake.requests == 5
    assert [r.body["messages"][0]["content"] for r in fake.received] == ["q3", "q4"]
