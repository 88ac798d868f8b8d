"""Supervision of the background task workers: `manage.py task_workers` (`make run` starts one worker,
`make serve` several).

Each worker is a `manage.py db_worker` process taking one task at a time from the queue in the database;
several share the queue safely (a task is claimed under a row lock). A worker that ends, whatever the
reason, is started again, after a pause that grows while it keeps dying young (a database that is down
must not be hammered). Stopping the supervisor (SIGTERM, Ctrl-C) stops the workers in two steps: first
they are asked to finish the task in hand and take no other; those still busy after `grace_s` are told
again, which stops their task, and the task queues its job again for the next worker (the judge jobs and
uploads do: core.background.requeue_on_shutdown); what is left after that is killed. A worker killed
outright (kill -9, the OOM killer) cannot say what it was doing; the supervisor says it for it through
`on_death`, so the pages show its job as interrupted at once instead of after a silence.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

log = logging.getLogger(__name__)

YOUNG_S = 10.0  # a worker that ends sooner than this after its start is restarted after a growing pause
MAX_PAUSE_S = 30.0
KILL_AFTER_S = 10.0  # after the second signal
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


@dataclass
class _Worker:
    index: int
    process: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    due: float = 0.0  # when to start it (again)
    deaths: int = 0  # in a row, each young
    generation: int = field(default=0)
    worker_id: str = ""


def _end_with_parent() -> None:
    """In the child before it runs: ask Linux to send it SIGTERM when the supervisor dies, so a supervisor
    killed outright (kill -9, the OOM killer) leaves no worker behind beside the one started after it."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _worker_id(index: int, generation: int) -> str:
    """Unique across the pool (db_worker asks for it), and readable in the task table: host, supervisor,
    slot and restart."""
    return f"{socket.gethostname()[:30]}-{os.getpid()}-{index}-{generation}"[:64]


def workers_supervise(
    *,
    processes: int,
    manage_py: Path,
    worker_args: Sequence[str] = (),
    grace_s: float = 10.0,
    say: Callable[[str], None] = print,
    on_death: Callable[[str], None] | None = None,
) -> None:
    """Run `processes` workers until SIGTERM or SIGINT, starting again any that ends; then stop them.

    `on_death` is told the id of each worker that ends of its own accord, before it is started again.
    """
    stopping = threading.Event()

    def stop(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    workers = [_Worker(index=i) for i in range(processes)]
    try:
        while not stopping.is_set():
            now = time.monotonic()
            for worker in workers:
                if worker.process is not None and worker.process.poll() is not None:
                    code = worker.process.returncode
                    young = now - worker.started < YOUNG_S
                    worker.deaths = worker.deaths + 1 if young else 0
                    worker.due = now + min(MAX_PAUSE_S, 2.0**worker.deaths - 1)
                    worker.process = None
                    say(f"worker {worker.index} ended (exit status {code}); starting it again")
                    if on_death is not None:
                        on_death(worker.worker_id)
                if worker.process is None and now >= worker.due:
                    worker.generation += 1
                    worker.worker_id = _worker_id(worker.index, worker.generation)
                    command = [
                        sys.executable,
                        str(manage_py),
                        "db_worker",
                        "--no-reload",
                        "--worker-id",
                        worker.worker_id,
                        *worker_args,
                    ]
                    worker.process = subprocess.Popen(command, preexec_fn=_end_with_parent)
                    worker.started = time.monotonic()
            stopping.wait(0.5)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _stop_all([w.process for w in workers if w.process is not None], grace_s, say)


def _stop_all(processes: list[subprocess.Popen[bytes]], grace_s: float, say: Callable[[str], None]) -> None:
    def alive() -> list[subprocess.Popen[bytes]]:
        return [p for p in processes if p.poll() is None]

    def wait(seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while alive() and time.monotonic() < deadline:
            time.sleep(0.1)

    for process in alive():
        process.send_signal(signal.SIGTERM)  # finish the task in hand, take no other
    wait(grace_s)
    if alive():
        say(f"{len(alive())} worker(s) still busy after {grace_s:g} s: their tasks stop and queue again")
        for process in alive():
            process.send_signal(signal.SIGTERM)
        wait(KILL_AFTER_S)
    for process in alive():
        process.kill()
        process.wait()
