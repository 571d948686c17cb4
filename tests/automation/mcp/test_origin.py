"""A snapshot's URL is its path alone only on the one origin the last answer naming URLs
named: an answer naming two forgets it."""

from __future__ import annotations

from automation.mcp.origin import ShownOrigin

PAGE = "Page: https://shop.example/orders?page=2\n- main [e1]:"


def test_a_path_alone_only_after_an_answer_naming_that_origin_alone() -> None:
    shown = ShownOrigin()
    assert shown.told(PAGE, snapshot=True) == PAGE  # nothing named before
    assert shown.told(PAGE, snapshot=True).startswith("Page: /orders?page=2\n")
    assert shown.told("clicked", snapshot=False) == "clicked"  # names none: kept
    assert shown.told(PAGE, snapshot=True).startswith("Page: /orders?page=2\n")
    shown.told("0: https://shop.example/\n1: http://other.example/", snapshot=False)
    assert shown.told(PAGE, snapshot=True) == PAGE  # two origins named: forgotten
    shown.told("opened https://other.example/a", snapshot=False)
    assert shown.told(PAGE, snapshot=True) == PAGE  # another origin's
    blank = "Page: about:blank\n"
    assert shown.told(blank, snapshot=True) == blank
    assert shown.told(PAGE, snapshot=True) == PAGE
