"""Progress of long ``simhash_find_all`` / ``simhash_clusters`` runs, as a bar.

The server reports a run's progress as NOTICEs when ``simhash.progress_interval``
is set ("simhash_find_all: 42% done, search 1700 of 4100, 12.3 s"; docs/find_all.md,
"Progress").  ``track_progress`` sets it on a connection and turns those
notices into calls of a callback, by default a progress bar on stderr::

    from pysimhash_sql.progress import track_progress
    from pysimhash_sql.queries import find_all

    with Session(engine) as session, track_progress(session):
        pairs = session.execute(find_all(select(Page.id, Page.fingerprint), 3)).all()

Works with a psycopg (3) or psycopg2 connection, and with a SQLAlchemy
Connection or Session on either driver.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

__all__ = ["Progress", "parse_notice", "progress_bar", "track_progress"]

# The one place the server's message format is read (src/find_all/progress.c writes it).
_NOTICE = re.compile(r"^(?P<function>simhash_\w+): (?P<percent>\d+)% done, (?P<detail>.*)$")


@dataclass(frozen=True)
class Progress:
    """One progress notice: which function, how far (0-100) and what it is doing."""

    function: str
    percent: int
    detail: str

    @property
    def done(self) -> bool:
        return self.percent >= 100


def parse_notice(message: str) -> Progress | None:
    """The progress a server message reports, or None for any other message."""
    match = _NOTICE.match(message.strip())
    if match is None:
        return None
    return Progress(match["function"], int(match["percent"]), match["detail"])


def progress_bar(file=None) -> Callable[[Progress], None]:
    """A callback drawing a tqdm bar (0-100 %) on file (default stderr), closed
    when a run reports 100 %."""
    from tqdm import tqdm

    bar: list[Any] = []

    def update(progress: Progress) -> None:
        if not bar:
            bar.append(tqdm(total=100, unit="%", desc=progress.function, file=file or sys.stderr,
                            bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed} {postfix}"))
        bar[0].set_postfix_str(progress.detail, refresh=False)
        bar[0].update(progress.percent - bar[0].n)
        if progress.done:
            bar.pop().close()

    return update


def _dbapi_connection(connection: Any) -> Any:
    """The driver's own connection under a SQLAlchemy Session or Connection."""
    if hasattr(connection, "connection") and hasattr(connection, "get_bind"):  # Session
        connection = connection.connection()
    dbapi = getattr(connection, "connection", None)  # SQLAlchemy Connection -> pool proxy
    if dbapi is not None and hasattr(dbapi, "driver_connection"):
        return dbapi.driver_connection
    return connection


class _Notices(list):
    """psycopg2 appends each notice to connection.notices: this list passes them on."""

    def __init__(self, previous: Any, handle: Callable[[str], None]) -> None:
        super().__init__(previous)
        self._handle = handle

    def append(self, message: str) -> None:
        super().append(message)
        self._handle(message.split(":  ", 1)[-1])


@contextmanager
def track_progress(connection: Any, interval: float = 1.0,
                   on_progress: Callable[[Progress], None] | None = None) -> Iterator[None]:
    """Within the block, runs on ``connection`` report progress every ``interval``
    seconds to ``on_progress`` (default: ``progress_bar()``).  The setting is
    the session's (``SET``), reset at the end of the block."""
    callback = on_progress or progress_bar()
    conn = _dbapi_connection(connection)

    def handle(message: str) -> None:
        progress = parse_notice(message)
        if progress is not None:
            callback(progress)

    def set_interval(value: str) -> None:
        cursor = conn.cursor()
        cursor.execute("SELECT set_config('simhash.progress_interval', %s, false)", (value,))
        cursor.close()

    if hasattr(conn, "add_notice_handler"):  # psycopg 3
        def on_notice(diagnostic: Any) -> None:
            handle(diagnostic.message_primary or "")

        conn.add_notice_handler(on_notice)
        remove = lambda: conn.remove_notice_handler(on_notice)  # noqa: E731
    else:  # psycopg2
        previous = conn.notices
        conn.notices = _Notices(previous, handle)
        remove = lambda: setattr(conn, "notices", previous)  # noqa: E731
    set_interval(f"{max(1, int(interval * 1000))}ms")
    try:
        yield
    finally:
        remove()
        set_interval("0")
