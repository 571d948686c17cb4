"""Strategies of the property-based tests of the readers of documents (scenarios, their
elements' identities, batch files): any JSON value, and a valid document with one value
changed."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

__all__ = ["FUZZ", "json_values", "mutated", "paths"]

# Fixed: the same examples in every run (a failure is seen again where it was), bounded to
# seconds a file on a busy machine, no deadline (a slow example is no failure).
FUZZ = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow])  # fmt: skip

# Values a reader meets in files that are JSON but not what it wants: numbers past any
# whole number (1e400 reads as inf), texts with line breaks, NULs and placeholders.
json_scalars = (
    st.none() | st.booleans() | st.integers() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False) | st.text(max_size=12)
    | st.sampled_from(["", " ", "\n", "\x00", "\u2028", "${x}", "${SECRET:A}", "$${", "e1",
                       "button", "popup", "Promo", "Sign in", "text_visible", "1e9", "-1", "🙂",
                       float("inf"), -float("inf"), float("nan"), 1e308, 2**63, -1, 0, True,
                       [], {}])
)  # fmt: skip
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=10,
)  # fmt: skip


def paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside ``value`` (keys and list indexes), its own first."""
    out = [at]
    if isinstance(value, dict):
        for key, item in value.items():
            out += paths(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += paths(item, (*at, index))
    return out


_RETYPED = {str: lambda old: [old], int: str, float: str, bool: lambda old: int(old),
            list: lambda old: {str(i): v for i, v in enumerate(old)},
            dict: lambda old: list(old.values()), type(None): lambda old: ""}  # fmt: skip


@st.composite
def mutated(draw: Any, seed: Any, keys: tuple[str, ...] = ()) -> Any:
    """``seed`` with one value inside it replaced by any JSON value, deleted, given
    another type, or (an object) given a key more (one of ``keys``, or any), or (a list)
    an item of its own twice."""
    data = copy.deepcopy(seed)
    path = draw(st.sampled_from(paths(data)[1:]))
    parent = data
    for key in path[:-1]:
        parent = parent[key]
    key, old = path[-1], parent[path[-1]]
    how = draw(st.sampled_from(["replace", "delete", "retype", "add", "repeat"]))
    if how == "delete":
        del parent[key]
    elif how == "retype":
        parent[key] = _RETYPED[type(old)](old)
    elif how == "add" and isinstance(old, dict):
        more = st.sampled_from(keys) if keys else st.nothing()
        old[draw(more | st.text(max_size=8))] = draw(json_values)
    elif how == "repeat" and isinstance(old, list) and old:
        old.append(copy.deepcopy(draw(st.sampled_from(old))))
    else:
        parent[key] = draw(json_values)
    return data
