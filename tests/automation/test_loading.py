"""A process's start pauses the garbage collector while its modules load (automation.loading):
resumed once, with what was loaded frozen out of its reach; a collector someone else turned
off stays off."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from automation.loading import pause_gc, resume_gc


@pytest.fixture
def collector() -> Iterator[None]:
    was = gc.isenabled()
    yield
    gc.unfreeze()
    (gc.enable if was else gc.disable)()


def test_the_collector_pauses_while_loading_and_resumes_with_the_loaded_frozen(
    collector: None,
) -> None:
    gc.enable()
    pause_gc()
    assert not gc.isenabled()
    loaded = [object() for _ in range(10)]  # what an import makes
    resume_gc()
    assert gc.isenabled()
    assert gc.get_freeze_count() > len(loaded)
    gc.disable()
    resume_gc()  # once: a later call turns nothing on
    assert not gc.isenabled()


def test_a_collector_already_off_stays_off(collector: None) -> None:
    gc.disable()
    frozen = gc.get_freeze_count()
    pause_gc()
    resume_gc()
    assert not gc.isenabled()
    assert gc.get_freeze_count() == frozen
