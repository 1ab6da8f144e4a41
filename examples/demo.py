"""Load a directory of documents into PostgreSQL and print its near-duplicates.

    python examples/demo.py --dsn "host=... dbname=..." [--corpus DIR] [--distance 3]

Every document is fingerprinted inside the database with simhash(text) and
pairs whose fingerprints differ in at most --distance bits are printed.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import psycopg

CORPUS = Path(__file__).resolve().parent / "corpus"

SCHEMA = """
CREATE EXTENSION IF NOT EXISTS simhash;
CREATE TABLE IF NOT EXISTS documents (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name text UNIQUE NOT NULL,
    body text NOT NULL,
    fingerprint simhash64 GENERATED ALWAYS AS (simhash(body)) STORED
);
"""

NEAR_DUPLICATES = """
SELECT a.name, b.name, a.fingerprint <~> b.fingerprint AS distance
FROM documents a JOIN documents b
  ON a.id < b.id AND hamming_within(a.fingerprint, b.fingerprint, %(k)s)
ORDER BY distance, a.name, b.name
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--distance", type=int, default=3)
    args = parser.parse_args()

    files = sorted(p for p in args.corpus.iterdir() if p.is_file())
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        conn.execute(SCHEMA)
        with conn.cursor().copy("COPY documents (name, body) FROM STDIN") as copy:
            for path in files:
                copy.write_row((path.name, path.read_text(encoding="utf-8", errors="replace")))
        pairs = conn.execute(NEAR_DUPLICATES, {"k": args.distance}).fetchall()

    print(f"{len(files)} documents, {len(pairs)} near-duplicate pairs within {args.distance} bits:\n")
    width = max((len(a) for a, _, _ in pairs), default=10)
    print(f"{'distance':>8}  {'document':<{width}}  near-duplicate of")
    for a, b, distance in pairs:
        print(f"{distance:>8}  {a:<{width}}  {b}")


if __name__ == "__main__":
    main()
