"""The simhash-py drop-in (pysimhash_sql.hashing) beside simhash-py 0.4's C++.

Builds simhash-py 0.4.0 from its PyPI sdist (scripts/simhash-py.sh), runs the
sdist's own test suite against the drop-in, and times `compute` and `find_all`
on the same random hashes in both, each in its own interpreter, interleaved.
Exits 1 when the suite fails or an answer differs.

Usage: python bench/bench_simhash_py.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Timed in each interpreter: the same hashes (random.Random(seed)), the best of
# a few runs of timeit's autorange, and a digest of the answers to compare.
TIMING = r"""
import json, random, sys, timeit
sizes, blocks, bits, seed = json.loads(sys.argv[1])
if sys.argv[2] == "drop-in":
    from pysimhash_sql.hashing import compute, find_all
else:
    from simhash import compute, find_all
out = {}
for n in sizes:
    r = random.Random(seed + n)
    h = [r.getrandbits(64) for _ in range(n)]
    t = timeit.Timer(lambda: compute(h))
    loops, _ = t.autorange()
    best = min(t.repeat(5, loops)) / loops
    out[f"compute {n:,}"] = [best, compute(h)]
r = random.Random(seed)
base = [r.getrandbits(64) for _ in range(sizes[-1] // 2)]
h = base + [x ^ (1 << r.randrange(64)) ^ (1 << r.randrange(64)) for x in base]
t = timeit.Timer(lambda: find_all(h, blocks, bits))
best = min(t.repeat(3, 1))
pairs = sorted(tuple(sorted(p)) for p in find_all(h, blocks, bits))
out[f"find_all {len(h):,}, {blocks} blocks, {bits} bits"] = [best, hash(tuple(pairs))]
print(json.dumps(out))
"""


def simhash_py_dir() -> Path:
    """simhash-py 0.4's environment (built on first use)."""
    out = subprocess.run([str(ROOT / "scripts/simhash-py.sh")], check=True, capture_output=True, text=True)
    return Path(out.stdout.strip().splitlines()[-1])


def own_suite(test_dir: Path) -> tuple[bool, str]:
    """simhash-py's test/test.py with `import simhash` meaning the drop-in."""
    with tempfile.TemporaryDirectory(prefix="simhash-py-dropin-") as tmp:
        pkg = Path(tmp, "simhash")
        pkg.mkdir()
        (pkg / "__init__.py").write_text(
            "from pysimhash_sql.hashing import compute, find_all, num_differing_bits, shingle, unsigned_hash\n"
        )
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([tmp, str(ROOT)]))
        run = subprocess.run([sys.executable, "-m", "unittest", "test"], cwd=test_dir, env=env,
                             capture_output=True, text=True)
    return run.returncode == 0, [line for line in run.stderr.strip().splitlines()[-3:] if line]


def timings(python: str, which: str, args: list) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([python, "-c", TIMING, json.dumps(args), which], check=True, capture_output=True,
                         text=True, env=env)
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller inputs")
    args, _ = parser.parse_known_args()
    sizes = [20, 300, 10_000] if args.quick else [20, 300, 10_000, 100_000]
    timing_args = [sizes, 6, 3, 20241129]

    env_dir = simhash_py_dir()
    ok, tail = own_suite(env_dir / "test")
    print(f"simhash-py {env_dir.name.rsplit('-', 1)[-1]}'s own test suite against the drop-in: "
          f"{'passed' if ok else 'FAILED'} ({' / '.join(tail)})")

    # Interleaved: drop-in, C++, drop-in, C++; the best of each.
    runs = {"drop-in": [], "c++": []}
    for _ in range(2):
        runs["drop-in"].append(timings(sys.executable, "drop-in", timing_args))
        runs["c++"].append(timings(str(env_dir / "venv/bin/python"), "c++", timing_args))
    from pysimhash_sql import hashing
    implementation = getattr(hashing, "IMPLEMENTATION", "python")
    print(f"\n{'':42} {'drop-in (' + implementation + ')':>18} {'simhash-py C++':>16} {'speed ratio':>12}")
    same = True
    for name in runs["drop-in"][0]:
        ours = min(r[name][0] for r in runs["drop-in"])
        theirs = min(r[name][0] for r in runs["c++"])
        same &= runs["drop-in"][0][name][1] == runs["c++"][0][name][1]
        print(f"{name:42} {ours * 1e6:15.1f} µs {theirs * 1e6:13.1f} µs {theirs / ours:11.2f}×")
    print("answers: " + ("identical" if same else "DIFFERENT"))
    if not (ok and same):
        sys.exit(1)


if __name__ == "__main__":
    main()
