"""The build of the compiled fingerprint core, pysimhash_sql._simhash_core
(everything else is in pyproject.toml).

The module is pysimhash_sql/_core.c over pg_ext/src/core, the very files the
PostgreSQL extension compiles, with the system's C compiler and xxhash.h.
It is optional: where it cannot be built (no compiler, no xxhash.h, no
Python headers) the package installs without it, and where
PYSIMHASH_SQL_PURE_PYTHON=1 at build time it is not even tried; either way
pysimhash_sql.hashing then computes the same bits in pure Python
(hashing.IMPLEMENTATION says which one is in use).
"""

from __future__ import annotations

import os

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

CORE = "pg_ext/src/core"
CORE_FILES = ("core", "simd", "vote", "text_v1", "text_v2", "text_v3")
# As the extension's Makefile and PostgreSQL build the same files: -O3 lets the
# compiler vectorise the vote; PostgreSQL's own -fwrapv -fno-strict-aliasing.
UNIX_FLAGS = ["-O3", "-fwrapv", "-fno-strict-aliasing"]


class BuildCore(build_ext):
    def build_extensions(self) -> None:
        if self.compiler.compiler_type == "unix":
            for extension in self.extensions:
                extension.extra_compile_args = UNIX_FLAGS + extension.extra_compile_args
        super().build_extensions()


def extensions() -> list[Extension]:
    if os.environ.get("PYSIMHASH_SQL_PURE_PYTHON") == "1":
        return []
    return [
        Extension(
            "pysimhash_sql._simhash_core",
            sources=["pysimhash_sql/_core.c", *(f"{CORE}/{name}.c" for name in CORE_FILES)],
            include_dirs=["pg_ext/src"],
            depends=[f"{CORE}/{name}" for name in ("core.h", "simd.h", "vote.h", "text.h", "text_walk.h", "unicode_tables.h")],
            optional=True,
        )
    ]


setup(ext_modules=extensions(), cmdclass={"build_ext": BuildCore})
