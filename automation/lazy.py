"""Package roots that load their public names on first use (PEP 562): importing one module
of a package (``automation.errors``) then loads only what that module needs, not
Playwright and the agent loop behind the package's other names."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str, module_of: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, whose public names
    (``module_of``: each name and the module that defines it) are imported when first asked
    for, then kept in the package's ``namespace`` (its globals)."""

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # found once; later lookups don't come back here
        return value

    def __dir__() -> list[str]:
        return sorted(module_of)

    return __getattr__, __dir__
