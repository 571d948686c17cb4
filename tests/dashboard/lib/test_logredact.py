"""Addresses as the logs show them: a credential in a query string, or anything shaped
like an API token, is replaced; the rest of the address stays readable."""

from __future__ import annotations

import io
import logging

import pytest

from dashboard.lib.logredact import TokenLogFilter, redact_url

TOKEN = "tw_6dLL_eGy3EG6aDdqzPe9KKllRtf-7wqxMplqmEK7J74"


@pytest.mark.parametrize(
    ("logged", "shown"),
    [
        (f"GET /api/runs?token={TOKEN}", "GET /api/runs?token=[redacted]"),
        (f"GET /api/runs?status=queued&token={TOKEN}&limit=5",
         "GET /api/runs?status=queued&token=[redacted]&limit=5"),
        ("GET /x?access_token=abc&API_KEY=def;password=ghi",
         "GET /x?access_token=[redacted]&API_KEY=[redacted];password=[redacted]"),
        (f"GET /api/runs/{TOKEN}", "GET /api/runs/tw_[redacted]"),
        (f"Unauthorized: /x?q={TOKEN}", "Unauthorized: /x?q=tw_[redacted]"),
        ("GET /api/runs?status=queued&tokens_page=1", "GET /api/runs?status=queued&tokens_page=1"),
        ("GET /runs/12/?after=3", "GET /runs/12/?after=3"),
        ("tw_short", "tw_short"),
    ],
)  # fmt: skip
def test_credentials_in_an_address_are_redacted(logged: str, shown: str) -> None:
    assert redact_url(logged) == shown


def test_the_filter_redacts_a_record_s_message_with_its_arguments() -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(TokenLogFilter())
    log = logging.getLogger("tests.logredact")
    log.addHandler(handler)
    log.propagate = False
    try:
        log.warning("Unauthorized: %s", f"/api/runs?token={TOKEN}")
    finally:
        log.removeHandler(handler)
    assert out.getvalue() == "Unauthorized: /api/runs?token=[redacted]\n"
