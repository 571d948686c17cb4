"""Secrets never come back: redaction at the one exit (plain and URL-encoded), secrets only
in typed values, grants, and the pixels of screenshots and the live view."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import re
from typing import Any

import pytest

from automation.browser import screencast
from automation.browser.screencast import Frame, Screencast, person_input
from automation.browser.tab import Tab
from automation.errors import ActionInvalid, ScenarioInvalid, SecretNotGranted
from automation.events import ListSink, PageProblem, ScreenshotTaken, StepRecorded
from automation.recording.replay import Replay
from automation.recording.scenario import Scenario, ScenarioStep
from automation.secrets import MASK, RedactingSink, Secrets, SecretsLogFilter
from tests.bounds import room
from tests.refs import ref_of

VALUE = "s3cr@t pw+1"
OTHER = "x9y&z Q-8/2"  # the same length, other glyphs
ENV = {"TABWRIGHT_SECRET_PW": VALUE}


def filled(env: dict[str, str] | None = None, **kwargs: Any) -> Secrets:
    secrets = Secrets(env or ENV, **kwargs)
    secrets.fill("${SECRET:PW}")
    return secrets


@pytest.mark.parametrize(
    "text",
    [
        f"plain {VALUE} text",
        "http://x/done?pw=s3cr%40t+pw%2B1",  # a GET form submit
        "http://x/done?pw=s3cr%40t%20pw%2B1",  # quote()
        "http://x/done?pw=s3cr%2540t%2520pw%252B1",  # encoded twice
        "http://x/done?pw=s3cr%40T+pw%2b1".replace("T", "t"),  # lower-case hex
    ],
)
def test_a_value_is_redacted_plain_and_url_encoded(text: str) -> None:
    out = filled().redact(text)
    assert "${SECRET:PW}" in out and "s3cr" not in out, out


def test_a_short_password_is_masked_where_it_stands_by_itself_only() -> None:
    """A password of a few letters ("ab") is masked as a word, a field's value, in an
    address (plain or encoded), not inside every "about" and "tab" of a run's events (which
    would leave them unreadable, and tell what it is); a longer one, wherever it shows."""
    secrets = Secrets({})
    secrets.hide("ab")
    text = "typed ab about the tab: http://x/in?user=jo&pw=ab&next=%2Ftabs, {'value': 'ab'}"
    assert secrets.redact(text) == (
        f"typed {MASK} about the tab: http://x/in?user=jo&pw={MASK}&next=%2Ftabs, "
        f"{{'value': '{MASK}'}}"
    )
    assert secrets.is_secret("ab") and secrets.is_secret("pw ab") and not secrets.is_secret("tab")
    encoded = Secrets({})
    encoded.hide("a@")
    assert encoded.redact("?pw=a%40&q=da%40y") == f"?pw={MASK}&q=da%40y"
    longer = Secrets({})
    longer.hide("abcd")
    assert longer.redact("xabcdy abcd") == f"x{MASK}y {MASK}"


def test_redact_goes_through_events_keys_and_nested_args() -> None:
    secrets = filled()
    event = StepRecorded(
        index=0, action="fill", args={"value": VALUE, VALUE: [VALUE]},
        url="http://x/?pw=s3cr%40t+pw%2B1", identity={"value": VALUE},
    )  # fmt: skip
    assert "s3cr" not in json.dumps(secrets.redact_event(event).to_dict())
    shot = secrets.redact_event(ScreenshotTaken(1, b"\xff\xd8", url=f"http://x/?{VALUE}"))
    assert shot.jpeg == b"\xff\xd8" and "s3cr" not in shot.url


async def test_the_redacting_sink_is_the_exit_of_every_event() -> None:
    inner = ListSink()
    secrets = filled()
    await RedactingSink(inner, secrets).emit(
        PageProblem("console", f"typed {VALUE}", url="http://x/?pw=s3cr%40t+pw%2B1")
    )
    assert "s3cr" not in json.dumps(inner.events[0].to_dict())


def test_a_log_record_of_a_live_run_is_redacted(caplog: pytest.LogCaptureFixture) -> None:
    secrets = filled()
    logger = logging.getLogger("automation.test_secrets")
    caplog.handler.addFilter(SecretsLogFilter())
    try:
        logger.warning("the page is %s", "http://x/?pw=s3cr%40t+pw%2B1")
    finally:
        caplog.handler.filters.clear()
    assert "s3cr" not in caplog.text and "${SECRET:PW}" in caplog.text
    del secrets


@pytest.mark.parametrize(
    ("action", "args", "where"),
    [
        ("navigate", {"url": "http://x/?pw=${SECRET:PW}"}, "url"),
        ("click", {"ref": "${SECRET:PW}"}, "ref"),
        ("press", {"key": "${SECRET:PW}"}, "key"),
        ("select_option", {"ref": "e1", "values": ["${SECRET:PW}"]}, "values[0]"),
        ("fill_form", {"fields": [{"ref": "${SECRET:PW}", "value": "x"}]}, "fields[0].ref"),
        ("steps", {"steps": [{"type": "navigate", "url": "${SECRET:PW}"}]}, "steps[0].url"),
    ],
)
def test_a_secret_outside_a_typed_value_is_refused(
    action: str, args: dict[str, Any], where: str
) -> None:
    with pytest.raises(ActionInvalid, match=re.escape(f"not in {where}")):
        Secrets(ENV).fill_action(action, args)


def test_a_secret_in_a_typed_value_is_filled() -> None:
    secrets = Secrets(ENV)
    assert secrets.fill_action("fill", {"ref": "e1", "value": "${SECRET:PW}"})["value"] == VALUE
    form = {"fields": [{"ref": "e1", "value": "${SECRET:PW}"}]}
    assert secrets.fill_action("fill_form", form)["fields"][0]["value"] == VALUE
    steps = {"steps": [{"type": "fill", "ref": "e1", "value": "${SECRET:PW}"}]}
    assert secrets.fill_action("steps", steps)["steps"][0]["value"] == VALUE


def test_a_secret_not_granted_is_refused_by_name_never_by_value() -> None:
    secrets = Secrets({**ENV, "TABWRIGHT_SECRET_OK": "fine"}, allowed={"OK"})
    assert secrets.fill("${SECRET:OK}") == "fine"
    with pytest.raises(SecretNotGranted) as caught:
        secrets.fill({"value": "${SECRET:PW}"})
    assert "PW" in str(caught.value) and VALUE not in str(caught.value)
    with pytest.raises(SecretNotGranted):
        secrets.require({"PW"})


def scenario(step: dict[str, Any]) -> dict[str, Any]:
    return {"format": "tabwright.scenario", "version": 1, "name": "s", "steps": [step]}


def test_a_navigate_url_with_a_secret_is_refused_at_import() -> None:
    with pytest.raises(ScenarioInvalid, match=r"step 0 \(navigate\).*not in url"):
        Scenario.from_dict(
            scenario({"action": "navigate", "args": {"url": "http://x/${SECRET:PW}"}})
        )
    document = Scenario.from_dict(scenario({"action": "navigate", "args": {"url": "http://x/"}}))
    with pytest.raises(ScenarioInvalid, match="only a typed value"):
        document.with_param(0, "PW", secret=True)


# The caret blinks on the browser's own clock: two pictures of one field may catch it on
# and off.  It is drawn in no colour here, so the pictures differ only by what is typed.
FORM = """<!doctype html><title>Login</title>
<label>Password <input id="pw" name="pw"
  style="font: 20px monospace; width: 300px; caret-color: transparent"></label>
<p>after</p>"""


DRAWN_JS = "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"

# Where two JPEGs differ, decoded by the browser: says which part of a picture changed.
DIFFER_JS = """async ([a, b]) => {
  const pixels = async (b64) => {
    const response = await fetch("data:image/jpeg;base64," + b64);
    const bitmap = await createImageBitmap(await response.blob());
    const canvas = new OffscreenCanvas(bitmap.width, bitmap.height);
    const context = canvas.getContext("2d");
    context.drawImage(bitmap, 0, 0);
    return context.getImageData(0, 0, bitmap.width, bitmap.height);
  };
  const [x, y] = [await pixels(a), await pixels(b)];
  if (x.width !== y.width || x.height !== y.height)
    return `sizes ${x.width}x${x.height} and ${y.width}x${y.height}`;
  let [left, top, right, bottom, count] = [x.width, x.height, -1, -1, 0];
  for (let i = 0; i < x.data.length; i += 4) {
    if (Math.max(...[0, 1, 2].map((c) => Math.abs(x.data[i + c] - y.data[i + c]))) <= 8) continue;
    const [px, py] = [(i / 4) % x.width, Math.floor(i / 4 / x.width)];
    [left, top] = [Math.min(left, px), Math.min(top, py)];
    [right, bottom] = [Math.max(right, px), Math.max(bottom, py)];
    count++;
  }
  if (!count) return "the same pixels";
  return `${count} pixels differ in x ${left}-${right}, y ${top}-${bottom}`;
}"""


async def where_they_differ(tab: Tab, a: bytes, b: bytes) -> str:
    encoded = [base64.b64encode(jpeg).decode() for jpeg in (a, b)]
    return str(await tab.page.evaluate(DIFFER_JS, encoded))


async def typed_and_pictures(tab: Tab, value: str, *, secret: bool) -> tuple[bytes, bytes]:
    """Fill ``value`` into a text field (as a secret or not), append a key as a person on
    the live view would, then the step's screenshot and the next live-view frame."""
    await tab.page.set_content(FORM)
    secrets = Secrets({"TABWRIGHT_SECRET_PW": value})
    tab.is_secret = secrets.is_secret if secret else None
    snapshot = await tab.snapshot()
    args = secrets.fill_action("fill", {"ref": ref_of(snapshot, "textbox", "Password"),
                                        "value": "${SECRET:PW}"})  # fmt: skip
    budget = room()
    await tab.fill(args["ref"], args["value"], budget=budget)
    await person_input(tab, {"kind": "type", "text": "k"}, budget=budget)
    assert await tab.page.input_value("#pw") == value + "k"  # it was typed, just not drawn
    # No spelling underline under a secret's words (nor the spelling service reading it).
    assert await tab.page.eval_on_selector("#pw", "el => el.spellcheck") is not secret
    # The cast's first frame is the compositor's latest: wait until one drew the key.
    await tab.page.evaluate(DRAWN_JS)
    # The live view first: a frame drawn while a step's screenshot covers the field with
    # its grey box (as the screenshot is taken) would show that box instead.
    frames: list[Frame] = []
    arrived = asyncio.Event()

    async def on_frame(frame: Frame) -> None:
        frames.append(frame)
        arrived.set()

    cast = Screencast(lambda: tab, on_frame)
    cast.start()
    try:
        async with asyncio.timeout(60):  # bounds a hang only: the first frame comes at once
            await arrived.wait()
    finally:
        await cast.stop()
    shot = await tab.step_screenshot(0, budget=budget)
    assert shot is not None
    tab.is_secret = None
    return shot.jpeg, frames[0].jpeg


async def test_a_secret_field_is_drawn_the_same_whatever_its_value(
    tab: Tab, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The step's screenshot and the live view of a field holding a secret (with a
    person's key appended) are the same pixels for another value of the same length; the
    same fields filled with plain text differ, so the comparison can see a value."""
    # Each first frame is the cast's own: on a busy machine a screenshot may stand in for
    # a late one, and its JPEG encoder writes other bytes for the same pixels.
    monkeypatch.setattr(screencast, "_FIRST_FRAME_S", 3_600.0)
    shot_a, frame_a = await typed_and_pictures(tab, VALUE, secret=True)
    shot_b, frame_b = await typed_and_pictures(tab, OTHER, secret=True)
    plain_a, plain_frame_a = await typed_and_pictures(tab, VALUE, secret=False)
    plain_b, plain_frame_b = await typed_and_pictures(tab, OTHER, secret=False)
    assert plain_a != plain_b and plain_frame_a != plain_frame_b
    assert shot_a == shot_b, await where_they_differ(tab, shot_a, shot_b)
    assert frame_a == frame_b, await where_they_differ(tab, frame_a, frame_b)


PASSWORDS = """<!doctype html><title>Login</title>
<label>Password <input id="pw" type="password" style="font: 20px monospace; width: 300px"></label>
<label>New <input id="new" type="password" placeholder="at least 12 characters"></label>"""


async def test_a_secret_typed_is_said_typed_without_its_length(tab: Tab) -> None:
    """A fill or a type of a secret answers "a secret", not how many characters it has
    (a password's length narrows a guess); another value's answer says its length."""
    await tab.page.set_content(FORM)
    secrets = Secrets({"TABWRIGHT_SECRET_PW": "hunter2-hunter2"})
    tab.is_secret = secrets.is_secret
    try:
        field = ref_of(await tab.snapshot(), "textbox", "Password")
        budget = room()
        filled = await tab.fill(
            field, secrets.fill_action("fill", {"value": "${SECRET:PW}"})["value"], budget=budget
        )
        typed = await tab.type(
            field, secrets.fill_action("type", {"text": "${SECRET:PW}"})["text"], budget=budget
        )
        plain = await tab.fill(field, "open sesame", budget=budget)
    finally:
        tab.is_secret = None
    assert filled.startswith("filled textbox 'Password' with a secret"), filled
    assert typed.startswith("typed a secret into textbox 'Password'"), typed
    assert "15" not in filled + typed
    assert plain.startswith("filled textbox 'Password' with 11 characters"), plain


async def test_a_password_field_is_drawn_as_a_field_and_never_with_its_dots(tab: Tab) -> None:
    """Empty, a password field looks as the page draws it (no box over it, its
    placeholder shown); filled by a person or the page, it looks the same whatever the
    value and its length."""
    await tab.page.set_content(PASSWORDS)
    budget = room()
    empty = await tab.screenshot(budget=budget)
    assert empty == await tab.page.screenshot()  # what the page draws, untouched
    pictures = []
    for value in ("hunter2", "a much longer passphrase"):
        for field in ("#pw", "#new"):
            await tab.page.fill(field, value)
            await tab.page.locator(field).blur()  # no caret, no focus ring
        pictures.append(await tab.screenshot(budget=budget))
        assert await tab.page.screenshot() != empty  # the page itself draws the dots
    assert pictures[0] == pictures[1]


async def test_a_replay_refuses_a_misplaced_or_ungranted_secret_before_acting(
    tab: Tab, fixture_url: str
) -> None:
    """A scenario built in code is checked as an imported one is: nothing is opened."""
    await tab.page.set_content("<title>untouched</title>")
    leak = ScenarioStep("navigate", {"url": f"{fixture_url}/demo/form.html?pw=${{SECRET:PW}}"})
    with pytest.raises(ScenarioInvalid, match=r"step 0 .*not in url"):
        Replay(tab, Scenario(name="leak", steps=(leak,)), env=ENV)
    typed = ScenarioStep("fill", {"value": "${SECRET:PW}"}, selector="#name")
    with pytest.raises(SecretNotGranted, match="PW"):
        Replay(tab, Scenario(name="typed", steps=(typed,)), env=ENV,
               secrets=Secrets(ENV, allowed=set()))  # fmt: skip
    assert await tab.page.title() == "untouched"
