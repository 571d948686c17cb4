"""What an outcome check sees of a page, in a real browser: only what a person sees there.
Text drawn where no one sees it (off the page, transparent, clipped to nothing, a
screen-reader-only line) is not seen; nor is a value waiting in a field one types into,
which is there whether or not anything came of typing it (a read-only field's is)."""

from __future__ import annotations

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
