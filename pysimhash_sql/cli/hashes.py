"""find-all and find-clusters: drop-in replacements for simhash-cpp's
simhash-find-all and simhash-find-clusters, with their options (--input,
--output, --blocks, --distance), input (one decimal hash per line; duplicates
count once) and output (one JSON array per line).  Pairs and clusters come out
sorted, so the output of a given input is always the same."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable
from typing import IO

from .. import hashing
from ..fingerprint import MAX_FINGERPRINT
from .errors import UserError
from .output import open_input, open_output, progress

DECIMAL = re.compile(r"[0-9]+")


def read_hashes(stream: IO[str], source: str) -> set[int]:
    """The distinct hashes of a stream, one decimal per line (blank lines skipped)."""
    hashes = set()
    for number, line in enumerate(progress(stream, "hash"), 1):
        text = line.strip()
        if not text:
            continue
        if not DECIMAL.fullmatch(text) or int(text) > MAX_FINGERPRINT:
            shown = text if len(text) <= 40 else text[:40] + "..."
            raise UserError(
                f"{source}, line {number}: {shown!r} is not a 64-bit hash "
                f"(a decimal integer from 0 to {MAX_FINGERPRINT})"
            )
        hashes.add(int(text))
    return hashes


def check_blocks(blocks: int, distance: int) -> None:
    if not hashing.blocks_exceed_distance(blocks, distance):
        raise UserError(f"need 0 <= --distance < --blocks <= {hashing.MAX_BLOCKS}, "
                        f"got --distance {distance} --blocks {blocks}")


def connected_components(pairs: Iterable[tuple[int, int]]) -> list[list[int]]:
    """The clusters the pairs link (union-find), each sorted, ordered by smallest member."""
    parent: dict[int, int] = {}

    def root(x: int) -> int:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]  # path halving keeps the trees shallow
            x = parent[x]
        return x

    for a, b in pairs:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    members: dict[int, list[int]] = defaultdict(list)
    for x in parent:
        members[root(x)].append(x)
    return sorted(sorted(cluster) for cluster in members.values())


def pairs_of_input(args) -> list[tuple[int, int]]:
    """The near pairs of the hashes --input names, as the arguments ask."""
    check_blocks(args.blocks, args.distance)
    with open_input(args.input) as stream:
        hashes = read_hashes(stream, "stdin" if args.input == "-" else args.input)
    return hashing.find_all(hashes, args.blocks, args.distance)


def write_arrays(path: str, arrays: Iterable[Iterable[int]]) -> None:
    with open_output(path) as out:
        for array in arrays:
            out.write(json.dumps(list(array)) + "\n")  # "[a, b]", as simhash-cpp writes


def find_all_command(args) -> None:
    write_arrays(args.output, pairs_of_input(args))


def find_clusters_command(args) -> None:
    write_arrays(args.output, connected_components(pairs_of_input(args)))
