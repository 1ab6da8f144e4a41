"""The PGXN distribution: META.json, `make dist`, and `pgxn install` of the zip.

pgxnclient comes from PyPI with the test dependencies.  docs/install.md's PGXN
example runs as written: `pgxn install` builds and installs with the system
pg_config, but DESTDIR (which make reads from the environment) puts the files
in a scratch copy of the private installation, so the system PostgreSQL is
never touched, and psql creates the extension on a server started from that copy.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
from toolbox.readme import readme_blocks, run_example
from toolbox.servers import PG_CONFIG, ROOT, ScratchInstall, supported_majors

from pysimhash_sql.throwaway import ThrowawayServer

META = json.loads((ROOT / "pg_ext" / "META.json").read_text())
CONTROL = (ROOT / "pg_ext" / "simhash.control").read_text()

# PGXN Meta Spec 1.0.0 (https://pgxn.org/spec/): the fields, license keys,
# prerequisite phases and relations it defines.
REQUIRED = {"name", "version", "abstract", "maintainer", "license", "provides", "meta-spec"}
OPTIONAL = {"description", "generated_by", "tags", "no_index", "prereqs", "release_status", "resources"}
LICENSES = {
    "agpl_3", "apache_1_1", "apache_2_0", "artistic_1", "artistic_2", "bsd", "freebsd",
    "gfdl_1_2", "gfdl_1_3", "gpl_1", "gpl_2", "gpl_3", "lgpl_2_1", "lgpl_3_0", "mit",
    "mozilla_1_0", "mozilla_1_1", "openssl", "perl_5", "postgresql", "qpl_1_0", "ssleay",
    "sun", "zlib", "open_source", "restricted", "unrestricted", "unknown",
}
PHASES = {"configure", "build", "test", "runtime", "develop"}
RELATIONS = {"requires", "recommends", "suggests", "conflicts"}
SEMVER = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+)?")
VERSION_RANGE = re.compile(r"(0|((==|!=|>=|<=|>|<)\s*)?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*))(\s*,\s*\S.*)?")


def control_value(key: str) -> str:
    match = re.search(rf"^{key}\s*=\s*'([^']*)'", CONTROL, re.MULTILINE)
    assert match, f"simhash.control has no {key}"
    return match.group(1)


def test_meta_json_follows_the_pgxn_meta_spec() -> None:
    assert REQUIRED <= META.keys()
    assert META.keys() - REQUIRED - OPTIONAL == set()
    assert META["meta-spec"]["version"] == "1.0.0"
    assert re.fullmatch(r"[^\s/\\]{2,}", META["name"])
    assert SEMVER.fullmatch(META["version"])
    assert META["license"] in LICENSES
    assert META.get("release_status", "stable") in {"stable", "testing", "unstable"}
    assert all(isinstance(tag, str) and 1 <= len(tag) <= 255 for tag in META.get("tags", []))
    for name, extension in META["provides"].items():
        assert {"file", "version"} <= extension.keys(), name
        assert SEMVER.fullmatch(extension["version"])
        assert (ROOT / "pg_ext" / extension["file"]).is_file()
    for phase, relations in META.get("prereqs", {}).items():
        assert phase in PHASES
        for relation, requirements in relations.items():
            assert relation in RELATIONS
            assert all(VERSION_RANGE.fullmatch(str(v)) for v in requirements.values())
    assert META["prereqs"]["runtime"]["requires"]["PostgreSQL"] == f"{supported_majors()[0]}.0.0"


def test_versions_stay_in_step() -> None:
    """One release number everywhere: the distribution and the Python package
    are X.Y.Z; the extension's SQL version (default_version, the install
    script's name) is X.Y, because a patch release changes no SQL."""
    version = META["version"]
    assert META["provides"]["simhash"]["version"] == version
    pyproject = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert pyproject.group(1) == version
    sql_version = control_value("default_version")
    assert version.split(".")[:2] == sql_version.split(".")
    # provides.file is the install script every version starts from; the
    # upgrade scripts in sql/ chain it to default_version.
    base = re.fullmatch(r"sql/simhash--(\d+\.\d+)\.sql", META["provides"]["simhash"]["file"]).group(1)
    steps = dict(re.fullmatch(r"simhash--([\d.]+)--([\d.]+)\.sql", p.name).groups()
                 for p in (ROOT / "pg_ext" / "sql").glob("simhash--*--*.sql"))
    reached = base
    while reached in steps:
        reached = steps[reached]
    assert reached == sql_version


@pytest.fixture(scope="module")
def dist_zip() -> Path:
    if not (ROOT / ".git").exists():
        pytest.skip("make dist packs the files git tracks: needs a git checkout")
    result = subprocess.run(["make", "-s", "dist"], cwd=ROOT, check=True, capture_output=True, text=True)
    return Path(result.stdout.strip().splitlines()[-1])


def test_dist_zip_holds_the_extension_in_one_versioned_directory(dist_zip: Path) -> None:
    top = f"simhash-{META['version']}/"
    names = zipfile.ZipFile(dist_zip).namelist()
    assert dist_zip.name == f"simhash-{META['version']}.zip"
    assert all(name.startswith(top) for name in names)
    for required in ["META.json", "Makefile", "simhash.control", META["provides"]["simhash"]["file"]]:
        assert top + required in names


def test_readme_pgxn_example_installs_the_zip_and_creates_the_extension(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("pgxn install insists on write access to PostgreSQL's libdir (or sudo), even with DESTDIR")
    install = ScratchInstall(tmp_path / "install")
    install.remove_simhash()
    with ThrowawayServer(install.path("bindir"), tmp_path) as server:
        with server.connect() as admin:
            admin.execute("CREATE DATABASE fresh")
        # make reads DESTDIR from the environment: the install lands in the scratch copy.
        env = {"DESTDIR": str(install.root), **server.libpq_env("fresh")}
        # The pg_config on PATH is the original installation's: it names the
        # original directories, which DESTDIR moves into the copy.  (A
        # relocatable installation's copied pg_config would name the copy's.)
        original_bindir = Path(shutil.which(PG_CONFIG)).parent
        run_example(readme_blocks("PGXN", document="docs/install.md")[0], cwd=ROOT, env=env, path=[original_bindir])
        assert (install.extension_dir / "simhash.control").is_file()
        with server.connect("fresh") as conn:
            version = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'simhash'").fetchone()
            distance = conn.execute("SELECT hamming_distance('0'::simhash64, '0xff')").fetchone()
    assert version == (control_value("default_version"),)
    assert distance == (8,)
