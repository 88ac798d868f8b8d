"""Running calls at the same instant, each in its own thread with its own database connection."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any


def at_the_same_instant(
    call: Callable[[Any], Any], args: Sequence[Any]
) -> tuple[list[Any], list[BaseException]]:
    """Run `call(arg)` for every arg in its own thread, all released together; (results in order, errors)."""
    barrier = threading.Barrier(len(args))
    results: list[Any] = [None] * len(args)
    errors: list[BaseException] = []

    def run(index: int, arg: Any) -> None:
        from django.db import connection

        try:
            barrier.wait()
            results[index] = call(arg)
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, arg)) for i, arg in enumerate(args)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, errors
