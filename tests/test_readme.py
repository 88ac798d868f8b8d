"""Every shell command of the README and of the docs' campaign page runs, in order, so neither can drift
from the commands.

The commands of every ```sh block are read as a user would type them (lines ending in `\\` joined) and run
against a fresh test database, the public iKAT files and the demo collection:

- `.venv/bin/python manage.py <command> ...` runs in-process through call_command from a scratch directory
  (files the commands write land there); it must succeed. `../shared/data/` and `fixtures/` are read from
  their real places (ASSAY_SHARED_DATA overrides the first, as for the other tests).
- `.venv/bin/python manage.py <command> ... &` (the loopback fakes) runs as a `manage.py` subprocess on a
  free port, put in place of the documented one in every later line, and is stopped at the end.
- `export NAME=value ...` sets the environment, and the setting of that name when it is a string setting
  (the in-process commands read settings, not the environment).
- A line that ends in `# not run in tests: <reason>` is not run; the reason is reported. Every other line
  naming manage.py must start with `.venv/bin/python manage.py`, as written for a user to paste, so no
  command is left out silently.
- A command whose comment says `until then: "<message>"` (it needs work done in the browser first) must
  fail with that message.
- Other lines (`make run`, `make docs`) are not run here: the Makefile's own tests cover them.
"""

from __future__ import annotations

import io
import re
import shlex
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from tests.conftest import REPO

README = REPO / "README.md"
CAMPAIGN = REPO / "docs" / "campaign.md"
COMMAND = ".venv/bin/python manage.py "
NOT_RUN = re.compile(r"#\s*not run in tests:\s*(?P<reason>\S.*)$")
UNTIL_THEN = re.compile(r'#.*until then: "(?P<error>[^"]+)"')


@dataclass(frozen=True)
class ShellLine:
    number: int  # README line where the command starts
    text: str  # the command, continuations joined


def readme_shell_lines(text: str) -> Iterator[ShellLine]:
    """The non-blank, non-comment lines of the README's ```sh blocks, with `\\` continuations joined."""
    in_block = False
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if stripped.startswith("```"):
            in_block = stripped == "```sh" if not in_block else False
            continue
        if not in_block:
            continue
        if not pending:
            if not stripped or stripped.startswith("#"):
                continue
            start = number
        if stripped.endswith("\\"):
            pending.append(stripped[:-1].strip())
            continue
        pending.append(stripped)
        yield ShellLine(start, " ".join(pending))
        pending = []


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def local_paths(args: list[str], shared: Path) -> list[str]:
    """The README's relative paths, resolved from the checkout (the commands run in a scratch directory)."""
    out = []
    for arg in args:
        if arg.startswith("../shared/data/"):
            arg = str(shared / arg.removeprefix("../shared/data/"))
        elif arg.startswith("fixtures/"):
            arg = str(REPO / arg)
        out.append(arg)
    return out


class Tour:
    def __init__(self, document: str, shared: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.document = document
        self.shared = shared
        self.monkeypatch = monkeypatch
        self.ports: dict[str, str] = {}
        self.servers: list[subprocess.Popen[str]] = []
        self.not_run: list[str] = []
        self.failed: list[str] = []
        self.ran = 0
        self.outputs: dict[str, str] = {}  # what each command wrote, by its text as documented

    def ported(self, text: str) -> str:
        for documented, actual in self.ports.items():
            text = re.sub(rf"(?<=127\.0\.0\.1:){documented}\b", actual, text)
        return text

    def run(self, line: ShellLine) -> None:
        where = f"{self.document}:{line.number}: {line.text}"
        if (marker := NOT_RUN.search(line.text)) is not None:
            self.not_run.append(f"{self.document}:{line.number}: {marker['reason']}")
            return
        text = self.ported(line.text)
        if text.startswith("export "):
            for assignment in shlex.split(text, comments=True)[1:]:
                name, _, value = assignment.partition("=")
                self.monkeypatch.setenv(name, value)
                if isinstance(getattr(settings, name, None), str):
                    self.monkeypatch.setattr(settings, name, value)
            return
        if not text.startswith(COMMAND):
            assert "manage.py" not in text, (
                f"{where}: start the line with {COMMAND.strip()}, or mark it not run"
            )
            return
        argv = shlex.split(text.removeprefix(COMMAND), comments=True)
        if argv[-1] == "&":
            self.start_server(argv[:-1], where)
            return
        out = io.StringIO()
        expected = UNTIL_THEN.search(text)
        try:
            call_command(*local_paths(argv, self.shared), stdout=out, stderr=out)
        except CommandError as exc:
            if expected is None or expected["error"] not in str(exc):
                self.failed.append(f"{where}\n  failed: {exc}\n{out.getvalue()[-1000:]}")
        except SystemExit as exc:
            self.failed.append(f"{where}\n  exited {exc.code}\n{out.getvalue()[-1000:]}")
        else:
            if expected is not None:
                self.failed.append(f"{where}\n  succeeded, but the README says it fails until then")
        self.outputs[line.text] = out.getvalue()
        self.ran += 1

    def start_server(self, argv: list[str], where: str) -> None:
        """A loopback fake in its own process, on a free port instead of the documented one."""
        assert "--port" in argv, f"{where}: a server in the background needs --port"
        at = argv.index("--port") + 1
        self.ports[argv[at]] = str(port := free_port())
        argv[at] = str(port)
        server = subprocess.Popen(
            [sys.executable, str(REPO / "manage.py"), *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=REPO,
        )
        self.servers.append(server)
        assert server.stdout is not None
        first = server.stdout.readline()
        assert "listening" in first, f"{where}: the server did not start: {first}"

    def stop(self) -> None:
        for server in self.servers:
            server.terminate()
            server.wait(timeout=10)


def test_readme_shell_lines_join_continuations_and_skip_comments():
    text = "x\n```sh\n# a comment\nmanage.py a --b \\\n    --c d   # why\n\nexport X=1\n```\nmanage.py no\n"

    lines = list(readme_shell_lines(text))

    assert lines == [ShellLine(4, "manage.py a --b --c d   # why"), ShellLine(7, "export X=1")]


def run_document(path: Path, shared: Path, monkeypatch: pytest.MonkeyPatch) -> Tour:
    """Every command of the document's sh blocks, in order; the tour, with what failed and what was not run."""
    tour = Tour(str(path.relative_to(REPO)), shared, monkeypatch)
    try:
        for line in readme_shell_lines(path.read_text(encoding="utf-8")):
            tour.run(line)
    finally:
        tour.stop()
    return tour


def report(tour: Tour, capsys: pytest.CaptureFixture[str]) -> None:
    with capsys.disabled():
        sys.stdout.write(
            f"\n{tour.document}: {tour.ran} commands ran; not run: {len(tour.not_run)}\n"
            + "".join(f"  {reason}\n" for reason in tour.not_run)
        )


@pytest.mark.django_db
def test_every_readme_command_runs_as_written(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)

    # The README's campaign reads only the demo collection, never ../shared/data.
    tour = run_document(README, REPO.parent / "shared" / "data", monkeypatch)

    assert not tour.failed, "README commands that fail:\n" + "\n".join(tour.failed)
    assert tour.ran >= 8
    assert not tour.not_run
    assert (tmp_path / "llm.qrels").read_text().count("\n") > 0
    report(tour, capsys)


@pytest.mark.django_db
def test_every_campaign_page_command_runs_as_written(shared_data, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)

    tour = run_document(CAMPAIGN, shared_data, monkeypatch)

    # Every failure at once: a later command may fail only because an earlier one did, which the list shows.
    assert not tour.failed, "docs/campaign.md commands that fail:\n" + "\n".join(tour.failed)
    assert tour.ran >= 60
    assert (tmp_path / "nist.qrels").read_text().count("\n") == 20575
    assert all(reason.strip() for reason in tour.not_run)
    report(tour, capsys)


def output_of(tour: Tour, command: str) -> str:
    """What the one command of the tour starting with `command` wrote."""
    (text,) = [text for line, text in tour.outputs.items() if line.startswith(COMMAND + command)]
    return text


@pytest.mark.django_db
def test_the_readme_nugget_flow_on_the_demo_scores_the_runs_apart_with_kappa_below_1_and_a_tau(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)

    tour = run_document(README, REPO.parent / "shared" / "data", monkeypatch)

    assert not tour.failed, "\n".join(tour.failed)
    scores = output_of(tour, "nugget_scores --collection demo").splitlines()
    by_run = {line.split()[0]: tuple(map(float, line.split()[1:5])) for line in scores[1:4]}
    assert sorted(by_run) == ["bm25-baseline", "dense-rerank", "rag-llm"]
    assert len({score[3] for score in by_run.values()}) == 3  # all_score: three different run scores
    assert by_run["rag-llm"][3] > by_run["dense-rerank"][3] > by_run["bm25-baseline"][3]
    kappa = re.search(
        r"^Cohen's kappa\s+(-?[\d.]+)", output_of(tour, "agreement --collection demo --task nugget"), re.M
    )
    assert kappa is not None and 0 < float(kappa[1]) < 1
    tau = re.search(
        r"^Kendall's tau-b\s+(\S+)",
        output_of(tour, "rank_agreement --collection demo --measure nugget-all"),
        re.M,
    )
    assert tau is not None and tau[1] != "n/a"
