"""The first request to a new server process imports nothing heavy: the URL conf (every
view, the API's routers) and the template engine are loaded when the ASGI application is,
before daphne serves, since the first request resolves its URL on the event loop, where
every page, socket and run of the process would wait for the imports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.daphne import ROOT

FIRST_REQUEST = """
import asyncio, json, sys
import dashboard.asgi as asgi
from channels.testing import HttpCommunicator

before = set(sys.modules)

async def first() -> int:
    comm = HttpCommunicator(asgi.application, "GET", "/accounts/login/",
                            headers=[(b"host", b"127.0.0.1")])
    return (await comm.get_response(timeout=60))["status"]

status = asyncio.run(first())
print(json.dumps({"status": status, "imported": sorted(set(sys.modules) - before)}))
"""


def test_the_first_page_of_a_new_process_imports_no_view_api_or_template_machinery(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "dashboard.settings",
           "TABWRIGHT_VAR_DIR": str(tmp_path)}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", FIRST_REQUEST],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["status"] == 200
    heavy = [name for name in answer["imported"]
             if name.startswith(("dashboard.", "ninja", "django.template", "django.urls",
                                 "django.contrib.admin", "automation."))]  # fmt: skip
    assert heavy == [], heavy
