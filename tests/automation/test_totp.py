"""One-time codes: ``${TOTP:NAME}`` types the current RFC 6238 code of the secret NAME's
seed, granted, refused out of place and redacted as a secret is; the seed and the codes
never come back in events, results, logs or exports."""

from __future__ import annotations

import json
import logging

import pyotp
import pytest

from automation.errors import ActionInvalid, ParamMissing, ScenarioInvalid, SecretNotGranted
from automation.events import StepRecorded
from automation.recording.export import to_pytest
from automation.recording.fromrun import from_run_steps
from automation.recording.scenario import Scenario, ScenarioStep
from automation.secrets import Secrets, SecretsLogFilter, totp_code

# RFC 6238, appendix B: the SHA-1 seed "12345678901234567890", 8 digits.
RFC_SEED = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"
SEED = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"
ENV = {"TABWRIGHT_SECRET_BO": SEED}


def test_the_code_is_rfc_6238s() -> None:
    uri = f"otpauth://totp/Back%20office:ada?secret={RFC_SEED}&digits=8&issuer=Back%20office"
    assert totp_code(uri, "BO", at=59) == "94287082"
    assert totp_code(uri, "BO", at=1111111109) == "07081804"
    assert totp_code(RFC_SEED, "BO", at=59) == "287082"  # 6 digits by default


@pytest.mark.parametrize(
    "seed", ["not base32!", "JBSWY3DPEHPK3PXP", "otpauth://hotp/x?secret=JBSWY3DP&counter=1"]
)
def test_a_seed_that_is_not_one_names_the_secret_never_its_value(seed: str) -> None:
    with pytest.raises(ActionInvalid) as info:
        totp_code(seed, "BO")
    assert "BO" in info.value.message and seed not in str(info.value.to_dict())


def test_an_action_types_the_code_of_the_moment_and_it_is_redacted() -> None:
    secrets = Secrets(ENV, allowed={"BO"})
    args = secrets.fill_action("fill", {"ref": "e1", "value": "${TOTP:BO}"})
    code = args["value"]
    assert pyotp.TOTP(SEED).verify(code, valid_window=1)
    event = StepRecorded(index=0, action="fill", args={"value": code}, url=f"http://x/?c={code}")
    text = json.dumps(secrets.redact_event(event).to_dict())
    assert code not in text and SEED not in text and "${TOTP:BO}" in text
    assert secrets.is_secret(code)
    record = logging.LogRecord("x", logging.INFO, "f", 1, "typed %s from %s", (code, SEED), None)
    SecretsLogFilter().filter(record)
    assert code not in record.getMessage() and SEED not in record.getMessage()


def test_a_code_is_granted_as_its_secret_and_only_in_a_typed_value() -> None:
    with pytest.raises(SecretNotGranted, match="BO"):
        Secrets(ENV, allowed=set()).fill_action("fill", {"ref": "e1", "value": "${TOTP:BO}"})
    with pytest.raises(ActionInvalid, match="not in url"):
        Secrets(ENV).fill_action("navigate", {"url": "http://x/?code=${TOTP:BO}"})
    with pytest.raises(ScenarioInvalid, match="not in url"):
        ScenarioStep.from_dict({"action": "navigate", "args": {"url": "http://x/${TOTP:BO}"}})


def _scenario() -> Scenario:
    identity = {"role": "textbox", "name": "Code", "tag": "input", "name_attr": "otp"}
    return Scenario.from_dict({
        "version": 1, "name": "Sign in", "steps": [
            {"action": "fill", "args": {"value": "${TOTP:BO}"}, "identity": identity},
        ],
    })  # fmt: skip


def test_a_replay_resolves_the_seed_first_and_the_code_when_the_step_runs() -> None:
    scenario = _scenario()
    assert scenario.placeholders() == (set(), {"BO"})
    with pytest.raises(ParamMissing, match="TABWRIGHT_SECRET_BO"):
        scenario.resolve(env={})
    seen: list[tuple[str, str]] = []
    values = scenario.resolve(env=ENV)
    values = type(values)(values.params, values.secrets, lambda n, _s, c: seen.append((n, c)))
    code = values.fill(dict(scenario.steps[0].args))["value"]
    assert seen == [("BO", code)]
    assert code not in values.redact(f"typed {code}") and SEED not in values.redact(SEED)


def test_a_code_typed_into_a_one_time_code_field_is_saved_as_a_totp() -> None:
    identity = {"role": "textbox", "name": "Code", "tag": "input", "name_attr": "otp",
                "autocomplete": "one-time-code"}  # fmt: skip
    rows = [{"action": "fill", "args": {"ref": "e1", "value": "123456"}, "identity": identity}]
    scenario = from_run_steps(rows, name="Sign in")
    assert scenario.steps[0].args == {"value": "${TOTP:OTP}"}


def test_the_export_types_the_code_of_the_moment() -> None:
    text = to_pytest(_scenario())
    assert "import pyotp\n" in text
    assert "pyotp.TOTP(os.environ['TABWRIGHT_SECRET_BO']).now()" in text
    compile(text, "exported.py", "exec")
