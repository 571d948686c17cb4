"""Property-based: a scenario file the Import page or ``manage.py scenario_import`` is
given, a valid one with one or two values changed, is stored whole (and exports as it was
read) or refused with ScenarioInvalid, nothing stored."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.db import transaction
from hypothesis import HealthCheck, example, given, settings

from automation.errors import ScenarioInvalid
from automation.recording.scenario import Scenario as Document
from dashboard.lib import jsonin
from dashboard.scenarios import selectors, services
from tests.automation.recording.test_scenario_fuzz import KEYS, LOGIN, SEED
from tests.jsonfuzz import FUZZ, mutated

pytestmark = pytest.mark.django_db

# Each example is undone at its end: the owner's fixture is made once for all of them.
IMPORTS = settings(FUZZ, max_examples=150,
                   suppress_health_check=[*FUZZ.suppress_health_check,
                                          HealthCheck.function_scoped_fixture])  # fmt: skip


def rows() -> dict[str, int]:
    """How many rows each table holds."""
    models = [*apps.get_app_config("dashboard").get_models(), get_user_model()]
    return {model.__name__: model.objects.count() for model in models}


def import_or_refuse(owner: Any, data: Any) -> None:
    """Imported whole, as the file said, or refused with nothing stored; undone after.
    The file is read as the Import page reads it: one JSON has no number for (a value
    changed to infinity) is refused there."""
    try:
        data = jsonin.loads(json.dumps(data), max_bytes=10**6)
    except jsonin.JsonRefused as exc:
        assert exc.code == "bad_json" and "is no JSON number" in exc.message
        return
    with transaction.atomic():
        before = rows()
        try:
            stored = services.scenario_import(owner=owner, data=data)
        except ScenarioInvalid as exc:
            assert str(exc) and exc.to_dict()["code"]
            assert rows() == before
        else:
            read = Document.from_dict(data)
            exported = selectors.scenario_document(scenario=stored)
            assert exported.steps == read.steps and exported.params == read.params
            assert (exported.name, exported.handlers) == (read.name, read.handlers)
            assert exported.login_scenario == read.login_scenario
            # The scenarios it calls and signs in with, stored; one nothing uses is not.
            calls = {step.args["scenario"] for step in read.steps if step.action == "call"}
            needed = calls | ({read.login_scenario} - {""})
            assert needed <= exported.callees.keys() <= read.callees.keys()
        transaction.set_rollback(True)


def test_the_seed_is_imported_with_its_callees(owner: Any) -> None:
    stored = services.scenario_import(owner=owner, data=SEED)
    assert stored.steps.count() == len(SEED["steps"])
    exported = selectors.scenario_document(scenario=stored)
    assert set(exported.callees) == {"Promo", "Sign in"}
    assert exported.login_scenario == "Sign in"


FILE = '{"version": 1, "name": "x", "steps": [%s]}'


@pytest.mark.parametrize(
    "text",
    [
        FILE % '{"action": ["click"], "args": {}}',
        FILE % '{"action": "back", "identity": {"row_peers": 1e400}}',
        FILE % '{"action": "expect", "args": {"kind": {}}}',
    ],
)
def test_a_file_that_broke_the_reader_is_refused_and_nothing_stored(owner: Any, text: str) -> None:
    """Each escaped the reader untyped (a TypeError, an OverflowError): a 500 of the
    Import page, a traceback of ``scenario_import``.  (Read as Python reads JSON: 1e400 as
    infinity, which the pages' reader, jsonin, refuses before.)"""
    before = rows()
    with pytest.raises(ScenarioInvalid):
        services.scenario_import(owner=owner, data=json.loads(text))
    assert rows() == before


@pytest.mark.parametrize(
    "changed",
    [
        {"name": "N" * 201},
        {"base_url": "http://shop.test/" + "b" * 2000},
        {"login_scenario": "L" * 250, "callees": {"L" * 250: {**LOGIN, "name": "L" * 250}}},
    ],
)
def test_a_name_or_address_longer_than_kept_is_refused(owner: Any, changed: dict[str, Any]) -> None:
    """A name over 200 characters was stored cut (the file's login scenario then another
    name than the one it said), an address over 2,000 stored whole where the database
    does not check lengths, refused by one that does (a DataError, not a refusal)."""
    before = rows()
    with pytest.raises(ScenarioInvalid, match=r"its (name|base_url) is \d+ characters long"):
        services.scenario_import(owner=owner, data={**SEED, **changed})
    assert rows() == before
    exactly = {**SEED, "name": "N" * 200, "base_url": "http://shop.test/" + "b" * 1983}
    assert services.scenario_import(owner=owner, data=exactly).name == "N" * 200


@IMPORTS
@given(data=mutated(SEED, keys=KEYS))
@example(data={**SEED, "callees": {**SEED["callees"], "Promo": {**SEED, "name": "Promo"}}})
def test_a_valid_file_changed_once_is_imported_or_refused(owner: Any, data: Any) -> None:
    import_or_refuse(owner, data)


@IMPORTS
@given(data=mutated(SEED, keys=KEYS).flatmap(lambda data: mutated(data, keys=KEYS)))
def test_a_valid_file_changed_twice_is_imported_or_refused(owner: Any, data: Any) -> None:
    import_or_refuse(owner, data)
