"""Where results go: files or stdout, CSV or JSON Lines; the progress bar;
and the report of inputs skipped."""

from __future__ import annotations

import csv
import io
import json
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from itertools import chain, islice
from typing import IO, Any, TypeVar

from .errors import UserError

T = TypeVar("T")
FORMATS = ("csv", "jsonl")


@contextmanager
def open_input(path: str) -> Iterator[IO[str]]:
    """A text stream for reading: '-' is stdin.  Bytes that are not UTF-8 are
    read as U+FFFD, so the line they are on is reported as malformed."""
    if path == "-":
        yield io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
        return
    try:
        stream = open(path, encoding="utf-8", errors="replace")
    except OSError as e:
        raise UserError(f"cannot read {path}: {e.strerror}") from None
    with stream:
        yield stream


@contextmanager
def open_output(path: str) -> Iterator[IO[str]]:
    """A text stream for writing: '-' is stdout."""
    if path == "-":
        yield sys.stdout
        sys.stdout.flush()
        return
    try:
        stream = open(path, "w", encoding="utf-8", newline="")
    except OSError as e:
        raise UserError(f"cannot write {path}: {e.strerror}") from None
    with stream:
        yield stream


def write_records(stream: IO[str], fields: list[str], rows: Iterable[tuple], fmt: str) -> None:
    """Rows as CSV with a header line, or as one JSON object per line."""
    if fmt == "csv":
        writer = csv.writer(stream, lineterminator="\n")
        writer.writerow(fields)
        writer.writerows(rows)
    else:
        for row in rows:
            stream.write(json.dumps(dict(zip(fields, row))) + "\n")


def started(rows: Iterable[T]) -> Iterator[T]:
    """rows, with the first one already produced: whatever fails in producing
    it fails before anything is written."""
    rows = iter(rows)
    return chain(list(islice(rows, 1)), rows)


def bars() -> Any:
    """tqdm's progress bar class when stderr is a terminal, else None: tqdm
    (about 50 ms of imports) is imported only to draw."""
    if not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    return tqdm


def progress(items: Iterable[T], unit: str, total: int | None = None) -> Iterable[T]:
    """items, counted on a progress bar (count, rate) when stderr is a terminal;
    unchanged, and silent, when it is not."""
    bar = bars()
    return items if bar is None else bar(items, unit=unit, total=total, file=sys.stderr)


def counted(batches: Iterable[T], unit: str, size: Callable[[T], int], total: int | None = None) -> Iterator[T]:
    """batches, their items (size(batch) a batch) counted on a progress bar as
    progress() counts items: on a terminal only."""
    tqdm = bars()
    if tqdm is None:
        yield from batches
        return
    with tqdm(unit=unit, total=total, file=sys.stderr) as bar:
        for batch in batches:
            bar.update(size(batch))
            yield batch


class Skipped:
    """Inputs left out (the rest is processed): counted by reason and summed up
    in one line at the end (summary()); each reported in a line of its own as it
    happens with --verbose (verbose).  The exit status then says that some were."""

    def __init__(self) -> None:
        self.count = 0
        self.verbose = False
        self.silent = False
        self.reasons: Counter[str] = Counter()

    def __call__(self, message: str, reason: str | None = None, count: int = 1) -> None:
        """message: the line --verbose prints; reason: what the summary counts it as
        (default: the message's last clause before "; skipped")."""
        if self.silent:
            return
        self.count += count
        self.reasons[reason or message.split(": ")[-1].removesuffix("; skipped")] += count
        if self.verbose:
            tqdm = bars()  # clear of a progress bar, if one is drawn
            (print if tqdm is None else tqdm.write)(f"pysimhash-sql: {message}", file=sys.stderr)

    @contextmanager
    def muted(self) -> Iterator[None]:
        """Within the block, nothing is counted nor reported: inputs read a
        second time (dedupe) were reported by the first reading."""
        self.silent = True
        try:
            yield
        finally:
            self.silent = False

    def summary(self) -> str | None:
        """One line: how many inputs were skipped, by reason, most common first (ties alphabetically)."""
        if not self.count:
            return None
        reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(self.reasons.items(), key=lambda rn: (-rn[1], rn[0])))
        more = "" if self.verbose else " (--verbose lists each)"
        return f"pysimhash-sql: skipped {self.count}: {reasons}{more}"


skipped = Skipped()  # one command runs per process
