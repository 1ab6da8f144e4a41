"""Threads that run at once: the concurrent writers, readers and VACUUMs of
the concurrency tests."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence


def run_together(calls: Sequence[Callable[[], None]],
                 background: Sequence[Callable[[threading.Event], None]] = ()) -> list[BaseException]:
    """Runs each of calls in its own thread, all released at once by a barrier,
    while each of background loops in a thread of its own until the calls have
    all returned (it is given an Event, set then); returns every exception
    raised, for the test to assert there are none."""
    errors: list[BaseException] = []
    start = threading.Barrier(len(calls) + len(background))
    stop = threading.Event()

    def guarded(function: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                start.wait()
                function()
            except BaseException as error:  # noqa: BLE001 - returned to the test
                errors.append(error)
                start.abort()
        return run

    threads = [threading.Thread(target=guarded(call)) for call in calls]
    loops = [threading.Thread(target=guarded(lambda loop=loop: loop(stop))) for loop in background]
    for thread in [*threads, *loops]:
        thread.start()
    for thread in threads:
        thread.join()
    stop.set()
    for thread in loops:
        thread.join()
    return errors
