"""pysimhash_sql.progress: the server's progress NOTICEs of find_all and
clusters reach a callback, through each driver and through SQLAlchemy."""

from __future__ import annotations

import io

import psycopg2
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session

from pysimhash_sql.progress import Progress, parse_notice, progress_bar, track_progress

# Enough rows for the run to take a few hundred milliseconds.
LONG_RUN = (
    "SELECT count(*) FROM simhash_find_all("
    "'SELECT i, hashint8extended(i, 0)::simhash64 FROM generate_series(1, 1000000) i', 3, workers => 0)"
)


def check_reports(reports: list[Progress]) -> None:
    """At least the start of the search and the end, in order, from find_all."""
    assert len(reports) >= 2
    assert {r.function for r in reports} == {"simhash_find_all"}
    percents = [r.percent for r in reports]
    assert percents == sorted(percents)
    assert reports[-1].done and "1000000 rows" in reports[-1].detail
    assert "(read " in reports[-1].detail  # where the time went


def test_parse_notice() -> None:
    assert parse_notice("simhash_clusters: 42% done, search 10 of 20, 3.1 s") == Progress(
        "simhash_clusters", 42, "search 10 of 20, 3.1 s"
    )
    assert parse_notice("some other notice") is None


def test_psycopg_connection(simhash_db) -> None:
    reports: list[Progress] = []
    with track_progress(simhash_db, interval=0.001, on_progress=reports.append):
        simhash_db.execute(LONG_RUN)
    check_reports(reports)
    # outside the block the setting is off again: no more reports
    reports.clear()
    simhash_db.execute(LONG_RUN)
    assert reports == []
    assert simhash_db.execute("SHOW simhash.progress_interval").fetchone() == ("0",)


def test_psycopg2_connection(simhash_postgresql) -> None:
    reports: list[Progress] = []
    conn = psycopg2.connect(simhash_postgresql.info.dsn)
    try:
        with track_progress(conn, interval=0.001, on_progress=reports.append):
            with conn.cursor() as cursor:
                cursor.execute(LONG_RUN)
        check_reports(reports)
    finally:
        conn.close()


@pytest.mark.parametrize("driver", ["psycopg", "psycopg2"])
def test_sqlalchemy_session(simhash_url, driver) -> None:
    engine = create_engine(simhash_url.set(drivername=f"postgresql+{driver}"))
    reports: list[Progress] = []
    with Session(engine) as session, track_progress(session, interval=0.001, on_progress=reports.append):
        session.execute(text(LONG_RUN))
    check_reports(reports)
    engine.dispose()


def test_progress_bar_draws_to_the_end() -> None:
    out = io.StringIO()
    update = progress_bar(out)
    for percent in (0, 40, 100):
        update(Progress("simhash_find_all", percent, f"search {percent} of 100"))
    assert "simhash_find_all: 100%" in out.getvalue()
