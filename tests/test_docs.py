"""Every command and example in README.md, SECURITY.md and docs/ is run, or names the test
that runs it.

A fenced block says what it is in its info string, after the language (GitHub shows only
the language):

- ```` ```sh runnable ```` / ```` ```python runnable ```` / ```` ```json runnable ````: run
  here for real, a few at a time.  Shell blocks with bash (``-e -o pipefail``), Python
  blocks with the project's interpreter, both in the repository's root, each within its
  deadline (``timeout=S``, else BLOCK_TIMEOUT_S); a JSON block must parse.
- ```` ```sh runnable=server ````: a block that starts the dashboard and keeps serving
  (README's ``make run``).  It is started once, on a free ``PORT``, and is the dashboard
  the other blocks use: they get ``TW_URL`` (its address) and ``TOKEN`` (an API token of
  the ``admin`` it created, made on its tokens page as a person would).
- ```` ```sh covered-by=test_name ````: exercised by that test instead (a long-running
  thing, another machine's tools); the test must exist under tests/.
- ```` ```text ````: output or a drawing, never a command.

Any other block fails: no example is left unchecked.  Every block shares one ``var/``
(``TABWRIGHT_VAR_DIR``, a temporary folder): the dashboard's database, so a scenario
imported by one block is the dashboard's.  Files an example writes (``var/…``) land in the
repository's own ``var/``, which git ignores.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.automation.mcp.warmth import servers_started_meanwhile
from tests.daphne import api_token, log_in
from tests.net import free_port

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", ROOT / "SECURITY.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK_TIMEOUT_S = 30
PARALLEL_BLOCKS = 3
SERVER_START_S = 90  # make run: installs (nothing, here), migrates a new database, serves
FENCE = re.compile(r"^( *)(`{3,})(.*)$")  # a fence may be indented (in a list item)
# A text block is output or a drawing: a line that reads as a command belongs in a block
# that is run.
COMMAND_LINE = re.compile(r"^\s*(\$ |\.venv/|make |curl |python |sudo )")

pytestmark = pytest.mark.long  # one of the longest files: dealt out first


@dataclass
class Block:
    path: Path
    line: int  # of the opening fence, from 1
    lang: str
    attrs: dict[str, str]
    text: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    found: list[Block] = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, ticks, info = opening.groups()
        words = info.split()
        attrs = {key: value for key, _, value in (w.partition("=") for w in words[1:])}
        end = i + 1
        while end < len(lines) and lines[end].strip() != ticks:
            end += 1
        assert end < len(lines), f"{path}:{i + 1}: a fence that is never closed"
        text = "\n".join(line.removeprefix(indent) for line in lines[i + 1 : end])
        found.append(Block(path, i + 1, words[0] if words else "", attrs, text))
        i = end + 1
    return found


ALL = [b for path in DOCS for b in blocks(path)]
SERVERS = [b for b in ALL if b.attrs.get("runnable") == "server"]
RUNNABLE = [b for b in ALL if "runnable" in b.attrs and b.attrs["runnable"] != "server"]
COVERED = [b for b in ALL if "covered-by" in b.attrs]


# -- every block is accounted for ------------------------------------------------------


def test_the_docs_exist_and_readme_fits_on_a_screen() -> None:
    assert (ROOT / "docs" / "README.md").exists()
    assert len((ROOT / "README.md").read_text().splitlines()) <= 200


@pytest.mark.parametrize("block", ALL, ids=lambda b: b.where)
def test_each_block_is_run_or_names_its_test(block: Block) -> None:
    marked = [k for k in ("runnable", "covered-by") if k in block.attrs]
    if block.lang == "text" and not marked:
        commands = [line for line in block.text.splitlines() if COMMAND_LINE.match(line)]
        assert not commands, f"{block.where}: a command in a text block: {commands[0]!r}"
        return
    assert len(marked) == 1, (
        f"{block.where}: mark the block `runnable` or `covered-by=test_name` "
        f"(a drawing or output: ```text)"
    )
    if "runnable" in block.attrs:
        assert block.lang in RUNNERS or block.attrs["runnable"] == "server", (
            f"{block.where}: no runner for {block.lang!r} blocks"
        )


LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_between_the_pages_lead_somewhere(path: Path) -> None:
    for target in LINK.findall(path.read_text()):
        if "://" not in target:
            assert (path.parent / target).exists(), f"{path.name}: no {target}"


def _defined_tests() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        names.update(re.findall(r"^(?:async )?def (test_\w+)\(", path.read_text(), re.M))
    return names


@pytest.mark.parametrize("block", COVERED, ids=lambda b: b.where)
def test_a_covered_block_names_a_test_that_exists(block: Block) -> None:
    name = block.attrs["covered-by"].rpartition("::")[2]
    assert name in _defined_tests(), f"{block.where}: no test named {name} under tests/"


# -- the dashboard, as README's make run starts it -------------------------------------


@dataclass
class Dashboard:
    url: str
    env: dict[str, str]
    output: list[str] = field(default_factory=list)


def _wait_for_http(url: str, proc: subprocess.Popen[str], deadline: float, log: Path) -> None:
    while True:
        assert proc.poll() is None, f"the server ended ({proc.returncode}):\n{log.read_text()}"
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.TransportError:
            assert time.monotonic() < deadline, f"nothing answered at {url}:\n{log.read_text()}"
            time.sleep(0.1)


@pytest.fixture(scope="module")
def dashboard() -> Iterator[Dashboard]:
    assert len(SERVERS) == 1, "one block starts the dashboard (README's make run)"
    var = Path(tempfile.mkdtemp(prefix="tabwright-docs-"))
    port = free_port()
    env = {
        **os.environ,
        "TABWRIGHT_VAR_DIR": str(var),
        "PORT": str(port),
        "TABWRIGHT_WORKER_GRACE_S": "1",
        # The examples run a few at a time on this one dashboard, and each conversation
        # they start keeps its tab (a run's place) open: room for all of them at once.
        "TABWRIGHT_WORKER_RUNS": "10",
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    log = var / "make-run.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            ["bash", "-e", "-o", "pipefail", "-c", SERVERS[0].text],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # its process group: make, daphne
        )
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_for_http(f"{url}/accounts/login/", proc, time.monotonic() + SERVER_START_S, log)
        found = re.search(r"password: (\S+)", log.read_text())
        assert found is not None, f"make run printed no admin password:\n{log.read_text()}"
        page = log_in(url, ("admin", found.group(1)))
        try:
            token = api_token(page, "docs")
        finally:
            page.close()
        yield Dashboard(url, {**env, "TW_URL": url, "TOKEN": token, "PASSWORD": found.group(1)})
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)


# -- running the blocks ------------------------------------------------------------------


def _run_sh(
    block: Block, env: dict[str, str], timeout_s: float
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", block.text],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout_s,
        start_new_session=True,
    )  # fmt: skip


def _run_python(
    block: Block, env: dict[str, str], timeout_s: float
) -> subprocess.CompletedProcess[str]:
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as script:
        script.write(block.text + "\n")
    try:
        return subprocess.run(
            [sys.executable, script.name],
            cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
            timeout=timeout_s,
        )  # fmt: skip
    finally:
        os.unlink(script.name)


def _run_json(
    block: Block, env: dict[str, str], timeout_s: float
) -> subprocess.CompletedProcess[str]:
    json.loads(block.text)
    return subprocess.CompletedProcess([], 0, "", "")


RUNNERS = {"sh": _run_sh, "bash": _run_sh, "python": _run_python, "json": _run_json}


def _run(block: Block, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    timeout_s = float(block.attrs.get("timeout") or BLOCK_TIMEOUT_S)
    try:
        return RUNNERS[block.lang](block, env, timeout_s)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else exc.stderr or ""
        return subprocess.CompletedProcess([], f"not done within {timeout_s} s", out, err)


@pytest.fixture(scope="module")
def outcomes(dashboard: Dashboard) -> Iterator[dict[str, Future[subprocess.CompletedProcess[str]]]]:
    """Every runnable block started at once, PARALLEL_BLOCKS at a time (they wait on
    browsers and servers more than on the processor); each test reads its own."""
    with servers_started_meanwhile(), ThreadPoolExecutor(PARALLEL_BLOCKS) as pool:
        yield {block.where: pool.submit(_run, block, dashboard.env) for block in RUNNABLE}


@pytest.mark.parametrize("block", RUNNABLE, ids=lambda b: b.where)
def test_a_runnable_block_runs(
    block: Block, outcomes: dict[str, Future[subprocess.CompletedProcess[str]]]
) -> None:
    done = outcomes[block.where].result()
    assert done.returncode == 0, (
        f"{block.where} ended {done.returncode}:\n{block.text}\n"
        f"--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
    )


def test_the_server_block_served_the_dashboard(dashboard: Dashboard) -> None:
    """README's make run: the dashboard answered, with the admin it printed logged in."""
    page = log_in(dashboard.url, ("admin", dashboard.env["PASSWORD"]))
    try:
        home = page.get("/")
    finally:
        page.close()
    assert home.status_code == 200 and "New conversation" in home.text


# -- commands checked without running them -----------------------------------------------


def _make_targets() -> set[str]:
    targets: set[str] = set()
    for block in ALL:
        for line in block.text.splitlines():
            if line.startswith("make "):
                targets.add(shlex.split(line, comments=True)[1])
    return targets


@pytest.mark.parametrize("target", sorted(_make_targets()))
def test_the_make_targets_the_docs_name_exist(target: str) -> None:
    """``make test`` is the suite this test is part of; ``make -n`` shows each target is
    there and what it runs, without running it."""
    done = subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True, text=True,
                          timeout=30)  # fmt: skip
    assert done.returncode == 0, done.stderr
    if target.startswith("test"):
        assert "pytest" in done.stdout


def test_the_benchmark_commands_name_real_scripts_and_flags() -> None:
    """The benchmarks take minutes each and are not part of ``make test``: each command in
    docs/benchmarks.md names a script of bench/ that ends with a RESULT line, and its flags are
    the script's."""
    lines = [
        line
        for block in ALL
        if block.path.name == "benchmarks.md"
        for line in block.text.splitlines()
        if "-m bench." in line
    ]
    assert lines, "docs/benchmarks.md lists the benchmarks"
    for line in lines:
        words = shlex.split(line, comments=True)
        module = words[words.index("-m") + 1]
        source = (ROOT / (module.replace(".", "/") + ".py")).read_text()
        assert "RESULT" in source, f"{module} prints no RESULT line"
        for word in words[words.index("-m") + 2 :]:
            flag = word.split("=")[0]
            assert not flag.startswith("-") or flag in source, f"{module} knows no {flag}"
