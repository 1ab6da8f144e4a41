"""Running PostgreSQL's pg_ctl as an unprivileged user, for the pytest plugin
when the tests run as root (PostgreSQL refuses to run as root; CI containers
run as root).  Standard library only.

``pg_ctl_as(user, pg_ctl, directory)`` writes a small pg_ctl in ``directory``
that runs the real one as ``user``: it starts Python as the caller (root),
which drops to the user's uid and gid and then executes pg_ctl (``python -m
pysimhash_sql.server_user USER PG_CTL ARGS...``).  The caller keeps that
directory its own: the server user must not be able to change what root runs.
"""

from __future__ import annotations

import os
import pwd
import shlex
import sys
from pathlib import Path

DEFAULT_USER = "nobody"


def account(name: str) -> pwd.struct_passwd:
    """The user's account, or a ValueError that says how to choose another."""
    try:
        return pwd.getpwnam(name)
    except KeyError:
        raise ValueError(
            f"no user {name!r} to run PostgreSQL as (tests run as root, and PostgreSQL refuses to): "
            "create it, or name an existing unprivileged user with the simhash_pg_user ini option "
            "or the SIMHASH_PG_USER environment variable"
        ) from None


def pg_ctl_as(user: str, pg_ctl: str, directory: Path) -> Path:
    """A pg_ctl in ``directory`` that runs ``pg_ctl`` as ``user``."""
    account(user)
    wrapper = directory / "pg_ctl"
    command = [sys.executable, "-m", __name__, user, pg_ctl]
    wrapper.write_text(f'#!/bin/sh\nexec {" ".join(map(shlex.quote, command))} "$@"\n')
    wrapper.chmod(0o700)
    return wrapper


def give(path: Path, user: str) -> None:
    """Make ``path`` the user's (a directory the server writes to)."""
    entry = account(user)
    os.chown(path, entry.pw_uid, entry.pw_gid)


def main(argv: list[str]) -> None:
    """[--cwd DIR] USER PROGRAM ARGS...: runs PROGRAM as USER, in DIR (else
    from /, which anyone can read)."""
    cwd = "/"
    if argv[:1] == ["--cwd"]:
        cwd, argv = argv[1], argv[2:]
    user, program, *args = argv
    entry = account(user)
    os.setgroups([])
    os.setgid(entry.pw_gid)
    os.setuid(entry.pw_uid)
    os.chdir(cwd)
    os.execv(program, [program, *args])


if __name__ == "__main__":
    main(sys.argv[1:])
