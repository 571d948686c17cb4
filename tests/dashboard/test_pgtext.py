"""On PostgreSQL a NUL character a page gave (in a run's text, an event's data) is stored
as U+FFFD instead of failing the write; a string that only says ``\\u0000`` stays as it is."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.daphne import ROOT, START_TIMEOUT_S
from tests.servers import postgres_server

# Through Django's own connection and JSON adaptation, as every model write goes.
WRITE_AND_READ = r"""
import json
from django.db import connection
with connection.cursor() as cursor:
    cursor.execute("create temp table t (a text, b jsonb)")
    data = {"title": "Orders\x00 page", "said": "\\u0000", "list": ["\x00"]}
    cursor.execute("insert into t values (%s, %s)",
                   ["x\x00y", connection.ops.adapt_json_value(data, None)])
    cursor.execute("select a, b::text from t")
    text, stored = cursor.fetchone()
print(json.dumps({"text": text, "json": json.loads(stored)}))
"""


def test_a_nul_a_page_gave_is_stored_as_a_replacement_character_on_postgresql() -> None:
    with postgres_server() as database_url:
        done = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", WRITE_AND_READ],
            cwd=ROOT, env={**os.environ, "DATABASE_URL": database_url},
            capture_output=True, text=True, timeout=START_TIMEOUT_S,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got == {
        "text": "x\ufffdy",
        "json": {"title": "Orders\ufffd page", "said": "\\u0000", "list": ["\ufffd"]},
    }
