"""Runs a command (the dashboard's tests: ``make test-postgres``) against a PostgreSQL of
its own, as a scaled-out deployment stores its data: Debian's server on a free loopback
port with its data in a temporary folder (tests.servers), removed when the command ends.
The command gets ``DATABASE_URL``; pytest-django makes its test databases there.

    python -m tests.on_postgres .venv/bin/python -m pytest tests/dashboard --tier fast
"""

from __future__ import annotations

import os
import subprocess
import sys

from tests.servers import postgres_server


def main(command: list[str]) -> int:
    if not command:
        print("usage: python -m tests.on_postgres COMMAND [ARGS...]", file=sys.stderr)
        return 2
    with postgres_server() as database_url:
        return subprocess.run(command, env={**os.environ, "DATABASE_URL": database_url}).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
