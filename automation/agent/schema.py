"""A run's output schema made safe to apply: whoever writes the schema (a person on the
form, a script through the API) must not make the server fetch anything or spin.

- ``$ref`` is resolved within the schema itself (the ``referencing`` library, with a
  registry that retrieves nothing): a remote, relative or ``file:`` reference is refused
  when the schema is saved, and can't be followed when an output is checked.
- ``pattern`` and ``patternProperties`` are matched with RE2 (``google-re2``), in time
  linear in the input: no pattern backtracks.  A pattern RE2 can't compile
  (backreferences, lookaround) is refused when the schema is saved.  jsonschema matches
  ``patternProperties`` with Python's ``re`` in three places: the keyword itself,
  ``additionalProperties`` (overridden here too) and ``unevaluatedProperties`` (whose
  bookkeeping is jsonschema's own), so a schema that uses ``unevaluatedProperties``
  together with ``patternProperties`` is refused.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import jsonschema
import re2
import referencing
import referencing.jsonschema
from jsonschema.exceptions import ValidationError
from referencing.exceptions import Unresolvable

from automation.errors import OutputInvalid

__all__ = ["check_safe", "validator_class"]

REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a refused pattern is the caller's error, not a log line


def validator_class(schema: dict[str, Any]) -> Any:
    """The jsonschema validator class the schema asks for (Draft 2020-12 unless its
    ``$schema`` names another), with patterns matched by RE2."""
    base = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return _safe(base)


def validator(schema: dict[str, Any]) -> Any:
    """A validator of ``schema`` whose ``$ref`` can only reach the schema itself."""
    return validator_class(schema)(schema, registry=referencing.Registry())


def check_safe(schema: dict[str, Any]) -> None:
    """Nothing if every reference of ``schema`` points within it and every pattern compiles
    with RE2; else OutputInvalid.  ``schema`` is already valid against its meta-schema."""
    base = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    dialect = base.ID_OF(base.META_SCHEMA) or ""
    spec = referencing.jsonschema.specification_with(
        dialect, default=referencing.jsonschema.DRAFT202012
    )
    root = spec.create_resource(schema)
    keywords: set[str] = set()
    _walk(root, referencing.Registry().resolver_with_root(root), keywords)
    if {"unevaluatedProperties", "patternProperties"} <= keywords:
        raise OutputInvalid(
            "the output schema uses unevaluatedProperties with patternProperties, "
            "which this server does not check",
            hint="use additionalProperties beside patternProperties",
        )


def _walk(resource: Any, resolver: Any, keywords: set[str]) -> None:
    contents = resource.contents
    if isinstance(contents, dict):
        keywords.update(contents)
        for keyword in REF_KEYWORDS:
            ref = contents.get(keyword)
            if isinstance(ref, str):
                _check_ref(keyword, ref, resolver)
        if isinstance(contents.get("pattern"), str):
            _check_pattern("pattern", contents["pattern"])
        if isinstance(contents.get("patternProperties"), dict):
            for pattern in contents["patternProperties"]:
                _check_pattern("patternProperties", pattern)
    for sub in resource.subresources():
        _walk(sub, resolver.in_subresource(sub), keywords)


def _check_ref(keyword: str, ref: str, resolver: Any) -> None:
    try:
        resolver.lookup(ref)
    except Unresolvable:
        raise OutputInvalid(
            f"the output schema's {keyword} {ref!r} does not point within the schema",
            hint='only references within the schema itself are followed, like "#/$defs/item"; '
            "nothing is fetched",
        ) from None


def _check_pattern(keyword: str, pattern: str) -> None:
    try:
        _compiled(pattern)
    except re2.error as exc:
        reason = exc.args[0].decode(errors="replace") if exc.args else "not RE2 syntax"
        raise OutputInvalid(
            f"the output schema's {keyword} {pattern!r} can't be used: {reason}",
            hint="patterns are matched with RE2: no backreferences, no lookahead or "
            "lookbehind, repetitions up to {1000}",
        ) from None


@functools.lru_cache(maxsize=512)
def _compiled(pattern: str) -> Any:
    return re2.compile(pattern, _RE2_OPTIONS)


def _search(pattern: str, text: str) -> bool:
    return _compiled(pattern).search(text) is not None


# -- the keywords that match patterns, as jsonschema's own but with RE2 ------------------


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, pattern_properties: dict[str, Any], instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in pattern_properties.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, ap: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = {
        key
        for key in instance
        if key not in properties and not any(_search(p, key) for p in patterns)
    }
    if validator.is_type(ap, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], ap, path=extra)
    elif not ap and extras:
        names = ", ".join(repr(each) for each in sorted(extras, key=str))
        if patterns:
            verb = "does" if len(extras) == 1 else "do"
            listed = ", ".join(repr(each) for each in sorted(patterns))
            yield ValidationError(f"{names} {verb} not match any of the regexes: {listed}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            message = f"Additional properties are not allowed ({names} {verb} unexpected)"
            yield ValidationError(message)


_KEYWORDS = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
}


@functools.cache
def _safe(base: Any) -> Any:
    overrides = {k: fn for k, fn in _KEYWORDS.items() if k in base.VALIDATORS}
    return jsonschema.validators.extend(base, overrides)
