"""How far long work has got: the hook every long service takes, and its display on a command's stderr.

A service that reads or writes many records takes `progress: Progress | None` and calls it as
`progress(done, total)`; a command passes a CommandProgress, an upload or a job one that records it on its
row, a test nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from django.core.management.base import OutputWrapper

Progress = Callable[[int, int], None]


def _plain(text: str) -> str:
    return text


class CommandProgress:
    """How far a long command has got, on stderr; called as `progress(done, total)` by the service.

    On a terminal a bar redrawn in place; at --verbosity 2 or more a plain line now and then (a log or a
    pipe keeps a trace without a line per step); otherwise, and always at --verbosity 0, nothing, so
    scripts and tests see only the command's output. `close()` ends a bar's line.
    """

    WIDTH = 30
    # Redraw a bar at most this often; a plain line at most every LINE_EVERY_S. The first and last
    # steps always show.
    BAR_EVERY_S = 0.1
    LINE_EVERY_S = 1.0

    def __init__(self, stream: OutputWrapper, *, verbosity: int, unit: str) -> None:
        self.stream = stream
        self.unit = unit
        self.bar = stream.isatty()
        self.enabled = verbosity >= 2 or (verbosity >= 1 and self.bar)
        self.every_s = self.BAR_EVERY_S if self.bar else self.LINE_EVERY_S
        self.shown: tuple[int, int] | None = None
        self.shown_at = float("-inf")
        self.open_line = False

    def __call__(self, done: int, total: int, detail: str = "") -> None:
        if not self.enabled or total <= 0 or (done, total) == self.shown:
            return
        now = time.monotonic()
        if done < total and self.shown is not None and now - self.shown_at < self.every_s:
            return
        self.shown, self.shown_at = (done, total), now
        text = f"{done}/{total} {self.unit}" + (f" {detail}" if detail else "")
        if self.bar:
            filled = self.WIDTH * min(done, total) // total
            self.stream.write(
                f"\r[{'#' * filled}{'.' * (self.WIDTH - filled)}] {text}", style_func=_plain, ending=""
            )
            self.stream.flush()
            self.open_line = True
        else:
            self.stream.write(text, style_func=_plain)

    def close(self) -> None:
        if self.open_line:
            self.stream.write("")
            self.open_line = False
