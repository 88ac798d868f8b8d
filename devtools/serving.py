"""How the loopback fakes' commands keep serving: until Ctrl-C, a time limit, or, when asked, until the
process that started them is gone (so `make run` leaves no fake behind, however it ends)."""

from __future__ import annotations

import os
import time


def serve_until_stopped(*, seconds: float = 0, stop_with_parent: bool = False) -> None:
    """Block while a fake serves from its own thread: `seconds` (0: no limit), Ctrl-C, or the parent's end
    (the fake is then handed to another parent, so its parent's pid changes)."""
    parent = os.getppid()
    deadline = time.monotonic() + seconds if seconds else None
    try:
        while deadline is None or time.monotonic() < deadline:
            if stop_with_parent and os.getppid() != parent:
                return
            time.sleep(0.2)
    except KeyboardInterrupt:
        pass
