"""What an outcome check sees of a page, in a real browser: only what a person sees there.
Text drawn where no one sees it (off the page, transparent, clipped to nothing, a
screen-reader-only line) is not seen; nor is a value waiting in a field one types into,
which is there whether or not anything came of typing it (a read-only field's is)."""

from __future__ import annotations

import pytest

from automation import Tab
from automation.recording import expect
from tests.bounds import room

PAGE = """<main><ul>
<li>Acme</li>
<li hidden>Zed Corp 1</li>
<li style="visibility: hidden">Zed Corp 2</li>
<li style="opacity: 0">Zed Corp 3</li>
<li style="position: absolute; left: -9999px">Zed Corp 4</li>
<li style="height: 0; overflow: hidden">Zed Corp 5</li>
<li hidden="until-found">Zed Corp 7</li>
<li><span style="position: absolute; width: 1px; height: 1px; overflow: hidden;
  clip: rect(0 0 0 0)">Zed Corp 6</span>Beta</li>
</ul>
<label>Company <input value="Initech"></label>
<label>Total <input value="42.00" readonly></label>
<table><tr><td>Grid</td><td><input value="Grid Co"></td></tr></table>
</main>"""


async def test_a_check_sees_what_a_person_sees(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/demo/form.html")
    await tab.page.set_content(PAGE)
    text = await expect.page_text(tab, room())
    assert "acme" in text and "beta" in text and "42.00" in text
    assert "zed corp" not in text
    assert "initech" not in text  # typed into a field: no sign anything came of it
    assert await expect.count_rows(tab, "Zed Corp", room()) == 0
    assert await expect.count_rows(tab, "Acme", room()) == 1
    assert await expect.count_rows(tab, "Grid Co", room()) == 1  # a row's fields are its own
    # ...as the app wrote them: a value typed into a row's field (an inline "add" row the
    # app refused) is not a row showing it.
    await tab.page.fill("table input", "Globex Ltd")
    assert await expect.count_rows(tab, "Globex Ltd", room()) == 0
    check = {"kind": "text_visible", "text": "Initech"}
    assert not (await expect._once(tab, check, None, room()))[0]


HIDDEN_FRAMES = [
    '<div style="display: none"><iframe srcdoc="{doc}"></iframe></div>',
    '<div style="visibility: hidden"><iframe srcdoc="{doc}"></iframe></div>',
    '<div style="height: 0; overflow: hidden"><iframe srcdoc="{doc}"></iframe></div>',
    '<iframe srcdoc="{doc}" style="position: absolute; left: -9999px"></iframe>',
    '<iframe srcdoc="{doc}" width="0" height="0" style="border: 0"></iframe>',
    '<div hidden><iframe srcdoc="&lt;iframe srcdoc=&quot;{doc}&quot;&gt;&lt;/iframe&gt;">'
    "</iframe></div>",  # a frame in a frame nobody sees
]


@pytest.mark.parametrize("hidden", HIDDEN_FRAMES)
async def test_a_frame_nobody_sees_shows_nothing(tab: Tab, fixture_url: str, hidden: str) -> None:
    """A collapsed panel's iframe (a receipt from an earlier payment): its text is not
    on the page a person sees; the same frame shown is."""
    await tab.navigate(f"{fixture_url}/demo/form.html")
    doc = "&lt;ul&gt;&lt;li&gt;Payment received&lt;/li&gt;&lt;/ul&gt;"
    for html, seen in ((hidden, False), ('<iframe srcdoc="{doc}"></iframe>', True)):
        await tab.page.set_content(f"<main><h1>Invoice</h1>{html.format(doc=doc)}</main>")
        at = tab.page.main_frame  # each frame loaded, down to the one with the text
        for _ in range(html.count("iframe srcdoc")):
            await at.wait_for_function("() => window.frames.length > 0", polling=50)
            at = at.child_frames[0]
        await at.wait_for_function("() => document.body?.textContent", polling=50)
        assert ("payment received" in await expect.page_text(tab, room())) is seen
        assert await expect.count_rows(tab, "Payment received", room()) == int(seen)
