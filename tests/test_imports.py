"""The shape of the code: no import circles, and dependencies that point one way.

The import graph is read by grimp (every import statement, those inside functions too: a
circle hidden behind a deferred import is still a circle; imports under ``TYPE_CHECKING``
are left out, they never run).
"""

from __future__ import annotations

import os
import subprocess
import sys
from functools import cache

import grimp
import pytest


@cache
def _graph() -> grimp.ImportGraph:
    return grimp.build_graph(
        "automation",
        "dashboard",
        include_external_packages=True,
        exclude_type_checking_imports=True,
        cache_dir=None,
    )


def _circles(graph: grimp.ImportGraph, package: str) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), among the
    package's own modules."""
    nodes = sorted(m for m in graph.modules if m == package or m.startswith(package + "."))
    inside = set(nodes)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(start: str) -> None:
        # Iterative, so a long chain of imports can't hit the recursion limit.
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start) & inside)))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append(
                        (
                            child,
                            iter(sorted(graph.find_modules_directly_imported_by(child) & inside)),
                        )
                    )
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))

    for node in nodes:
        if node not in index:
            visit(node)
    return found


@pytest.mark.parametrize("package", ["automation", "dashboard"])
def test_no_import_circles(package: str) -> None:
    assert _circles(_graph(), package) == []


def test_the_circle_finder_finds_a_circle() -> None:
    graph = grimp.ImportGraph()
    for module in ("p", "p.a", "p.b", "p.c"):
        graph.add_module(module)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.a")
    graph.add_import(importer="p.c", imported="p.a")
    assert _circles(graph, "p") == [["p.a", "p.b"]]


def test_the_engine_never_imports_django_or_the_dashboard() -> None:
    graph = _graph()
    for forbidden in ("django", "channels", "dashboard"):
        chain = graph.find_shortest_chain(
            importer="automation", imported=forbidden, as_packages=True
        )
        assert chain is None, f"automation reaches {forbidden}: {' -> '.join(chain or ())}"


# -- dashboard's layers ---------------------------------------------------------------------
# From the bottom up: leaf helpers; the models; writes and reads (services, selectors of
# every surface) and what the engine runs with; a run's life; batches, schedules, alerts;
# the worker that joins the two; and on top what serves people (views, forms, consumers,
# the API, URLs, admin, commands).  A module imports only from its own layer or below.
LAYERS = ("lib", "models", "data", "runs", "jobs", "worker", "top")
_TOP_MODULES = {"views", "forms", "consumers", "batch_views", "schedule_views"}


def layer_of(module: str) -> str:
    parts = module.split(".")
    if parts[:2] == ["dashboard", "lib"]:
        return "lib"
    if module in ("dashboard.models", "dashboard.settings") or parts[1:2] == ["migrations"]:
        return "models"
    if parts[-1] in ("services", "selectors") or module == "dashboard.engineconf":
        return "data"
    if parts[-1].endswith("_services"):  # one concept's writes, beside services.py
        return "data"
    if parts[-1] in _TOP_MODULES or len(parts) < 3:
        return "worker" if module == "dashboard.worker" else "top"
    return {"runs": "runs", "jobs": "jobs"}.get(parts[1], "top")


def test_dashboard_imports_point_down_its_layers() -> None:
    graph = _graph()
    upward = [
        f"{module} ({layer_of(module)}) imports {imported} ({layer_of(imported)})"
        for module in sorted(m for m in graph.modules if m.startswith("dashboard."))
        for imported in sorted(graph.find_modules_directly_imported_by(module))
        if imported.startswith("dashboard.")
        and LAYERS.index(layer_of(imported)) > LAYERS.index(layer_of(module))
    ]
    assert upward == []


@pytest.mark.parametrize(
    ("module", "layer"),
    [
        ("dashboard.lib.jsonin", "lib"),
        ("dashboard.models", "models"),
        ("dashboard.runs.services", "data"),
        ("dashboard.scenarios.selectors", "data"),
        ("dashboard.scenarios.call_services", "data"),
        ("dashboard.scenarios.edit_services", "data"),
        ("dashboard.runs.runner", "runs"),
        ("dashboard.jobs.batches", "jobs"),
        ("dashboard.worker", "worker"),
        ("dashboard.runs.consumers", "top"),
        ("dashboard.jobs.batch_views", "top"),
        ("dashboard.api.runs", "top"),
        ("dashboard.urls", "top"),
    ],
)
def test_each_module_has_its_layer(module: str, layer: str) -> None:
    assert module in _graph().modules
    assert layer_of(module) == layer


# -- what a process loads before its first use of it ----------------------------------------
def test_a_server_and_a_run_load_no_mcp_sdk_until_an_mcp_client_comes() -> None:
    """The dashboard's server (its ASGI app, with the runs' code) loads the MCP SDK at the
    first request to /mcp, not at start (dashboard.api.mcpmount); a run serving an MCP
    session needs only the plain tool definitions (automation.mcp.tools)."""
    code = (
        "import dashboard.asgi, automation.mcp.session, automation.mcp.tools, sys\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "dashboard.settings"}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded = set(proc.stdout.split())
    assert {"dashboard.asgi", "dashboard.api.mcpmount", "automation.mcp.session"} <= loaded
    assert sorted(m for m in loaded if m.split(".")[0] in ("mcp", "mcp_types")) == []
    assert "dashboard.api.mcp" not in loaded


def test_the_stdio_mcp_server_loads_no_http_client_to_start_its_browser() -> None:
    """What the stdio server loads to start its browser and open its tab, before the MCP
    SDK (automation.mcp.ahead), and the whole server after it: no httpx, which only a
    browser reached by its CDP URL needs (automation.browser.cdp.endpoint_of_url)."""
    code = (
        "import automation.mcp.ahead, sys\n"
        "ahead = 'httpx' in sys.modules\n"
        "import automation.mcp.stdio\n"
        "print(ahead, 'httpx' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["False", "False"]
