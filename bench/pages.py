"""Generated pages for the benchmarks: a back-office screen of about ``nodes`` DOM nodes.

The mix is what an admin console has: navigation, a filter form, a table of orders with
per-row buttons and links, paragraphs of help text, a few hidden templates.
"""

from __future__ import annotations

import random

__all__ = ["back_office_page"]


def back_office_page(nodes: int, *, seed: int = 7) -> str:
    rnd = random.Random(seed)
    words = "order invoice customer shipped pending refund account total region note".split()

    def text(n: int) -> str:
        return " ".join(rnd.choice(words) for _ in range(n))

    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Back office</title>",
        "<style>.hidden{display:none} td,th{padding:2px 6px} .card{border:1px solid #ccc;"
        "margin:4px;padding:4px}</style></head><body>",
        "<header><nav aria-label='Main'><ul>",
    ]
    parts += [f"<li><a href='#s{i}'>Section {i}</a></li>" for i in range(8)]
    parts.append("</ul></nav></header><main><h1>Orders</h1>")
    parts.append(
        "<form aria-label='Filter'><label>Search <input name='q'></label>"
        "<label>Status <select name='status'><option>any</option><option>open</option>"
        "<option>closed</option></select></label>"
        "<label><input type='checkbox' name='mine'> Mine only</label>"
        "<button type='submit'>Apply</button></form>"
    )
    # Each row is ~14 nodes; each help card ~8; fill to the target with a 3:1 mix.
    row_nodes, card_nodes = 14, 8
    budget = max(nodes - 60, 0)
    rows = budget * 3 // 4 // row_nodes
    cards = (budget - rows * row_nodes) // card_nodes
    parts.append(
        "<table><caption>Open orders</caption><thead><tr><th>No.</th><th>Customer</th>"
        "<th>Status</th><th>Actions</th></tr></thead><tbody>"
    )
    for i in range(rows):
        parts.append(
            f"<tr data-testid='row-{i}'><td>{1000 + i}</td><td><a href='#c{i}'>{text(2)}</a></td>"
            f"<td><span class='badge'>{rnd.choice(['open', 'paid', 'late'])}</span></td>"
            f"<td><button type='button'>Edit</button> <button type='button'>Delete</button>"
            f"<input type='checkbox' aria-label='Select {1000 + i}'></td></tr>"
        )
    parts.append("</tbody></table>")
    for i in range(cards):
        hidden = " class='hidden'" if i % 10 == 9 else ""
        parts.append(
            f"<div class='card'{hidden} id='s{i}'><h2>{text(2)}</h2><p>{text(12)} "
            f"<strong>{text(1)}</strong> {text(6)}</p><div><span>{text(3)}</span></div></div>"
        )
    parts.append(
        "<p><button type='button' id='count'>Count: 0</button></p>"
        "<script>let n=0;document.getElementById('count').onclick=function(){"
        "this.textContent='Count: '+(++n)}</script>"
    )
    parts.append("</main><footer><p>Back office demo</p></footer></body></html>")
    return "".join(parts)
