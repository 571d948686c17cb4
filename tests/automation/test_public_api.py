"""The engine's public names: listed in ``__all__``, each found on first use, and importing
one small module does not load the whole engine."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import automation

ROOT = Path(__file__).resolve().parents[2]
LAZY_PACKAGES = ("automation", "automation.browser", "automation.mcp")


def type_checking_imports(package: ModuleType) -> dict[str, str]:
    """What the package imports for type checkers: each name and the module it comes from."""
    tree = ast.parse(Path(package.__file__ or "").read_text())
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module
                found.update({alias.name: imp.module for alias in imp.names})
    return found


@pytest.mark.parametrize("name", LAZY_PACKAGES)
def test_all_lists_exactly_the_public_names(name: str) -> None:
    package = importlib.import_module(name)
    listed = package.__all__
    assert len(set(listed)) == len(listed)
    assert set(listed) == set(package._MODULE_OF) == set(dir(package))
    # Type checkers see the same names, from the same modules, as the lazy lookup.
    assert type_checking_imports(package) == package._MODULE_OF
    for public in listed:
        getattr(package, public)
    # Once all are loaded, every public name the package holds is listed (its submodules and
    # the few names its own code uses aside).
    own = {"annotations", "TYPE_CHECKING", "lazy_names"}
    held = {
        n
        for n, v in vars(package).items()
        if not n.startswith("_") and not isinstance(v, ModuleType) and n not in own
    }
    assert held == set(listed)


@pytest.mark.parametrize("name", LAZY_PACKAGES)
def test_every_listed_name_resolves_to_its_module_object(name: str) -> None:
    package = importlib.import_module(name)
    for public in package.__all__:
        value = getattr(package, public)
        home = importlib.import_module(package._MODULE_OF[public])
        assert value is getattr(home, public)


@pytest.mark.parametrize("name", LAZY_PACKAGES)
def test_an_unknown_name_is_an_attribute_error(name: str) -> None:
    package = importlib.import_module(name)
    with pytest.raises(AttributeError, match="no_such_name"):
        package.no_such_name  # noqa: B018
    with pytest.raises(ImportError):
        exec(f"from {name} import no_such_name", {})


def test_from_import_still_works() -> None:
    from automation import ACTIONS, Budget, Tab
    from automation.browser.tab import Tab as TabItself

    assert Tab is TabItself
    assert "click" in ACTIONS
    assert Budget(1_000).remaining_ms() > 0
    assert automation.Tab is Tab


def test_no_module_reaches_into_a_tabs_private_members() -> None:
    """A tab is built on its public core (automation.browser.core): the modules that act on
    a tab call its public methods, never ``tab._something``."""
    reach = re.compile(r"\b(?:tab|self\.tab|core)\._[a-z]\w*")
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sorted((ROOT / "automation").rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if reach.search(line)
    ]
    assert found == []


def test_importing_errors_loads_neither_playwright_nor_the_agent() -> None:
    code = "import automation.errors, sys\nprint('\\n'.join(sorted(sys.modules)))\n"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = proc.stdout.split()
    assert "automation.errors" in loaded
    heavy = [
        m
        for m in loaded
        if m.split(".")[0] == "playwright"
        or m.startswith(("automation.agent", "automation.llm", "automation.browser"))
        or m in ("automation.actions", "httpx")
    ]
    assert heavy == []
