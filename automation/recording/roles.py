"""The roles an element identity may carry: one list, checked wherever a role comes in.

A role is read from a page (the snapshot registry, snapshot.js), so it is untrusted: a
page that tampers with the registry could hand back any string, and a role reaches the
pytest export's code (``get_by_role(role, ...)``) and every listing of a scenario.  So a
role is checked against this list when a step is recorded (identity capture, agent
steps, the recorder), when a scenario is read (file and JSON import, the database) and
when it is exported.

- :data:`ARIA_ROLES`: the WAI-ARIA 1.2 roles (https://www.w3.org/TR/wai-aria-1.2/#role_definitions,
  abstract roles left out: a page can't give them), the same list snapshot.js accepts in a
  ``role`` attribute and Playwright's ``get_by_role`` takes.
- :data:`PSEUDO_ROLES`: Tabwright's own names for what has no ARIA role but is shown in a
  snapshot: ``clickable`` (a plain element with a click handler or a pointer cursor) and
  ``iframe`` (a frame's host element).  Playwright can't find these by role.
"""

from __future__ import annotations

from automation.errors import ActionInvalid

__all__ = ["ARIA_ROLES", "PSEUDO_ROLES", "ROLES", "check_role", "is_aria_role"]

ARIA_ROLES = frozenset(
    """
    alert alertdialog application article banner blockquote button caption cell checkbox
    code columnheader combobox complementary contentinfo definition deletion dialog
    directory document emphasis feed figure form generic grid gridcell group heading img
    insertion link list listbox listitem log main marquee math meter menu menubar menuitem
    menuitemcheckbox menuitemradio navigation none note option paragraph presentation
    progressbar radio radiogroup region row rowgroup rowheader scrollbar search searchbox
    separator slider spinbutton status strong subscript superscript switch tab table
    tablist tabpanel term textbox time timer toolbar tooltip tree treegrid treeitem
    """.split()
)
PSEUDO_ROLES = frozenset({"clickable", "iframe"})
ROLES = ARIA_ROLES | PSEUDO_ROLES


def is_aria_role(role: str) -> bool:
    """Whether Playwright's ``get_by_role`` can find elements of this role."""
    return role in ARIA_ROLES


def check_role(role: object, *, what: str = "role") -> str:
    """``role`` if it is one of :data:`ROLES` (or empty: no role); else ActionInvalid
    naming ``what`` and the value, shown as ``repr`` so a hostile value stays one line."""
    if role == "" or (isinstance(role, str) and role in ROLES):
        return role  # type: ignore[return-value]
    shown = repr(role) if len(repr(role)) <= 80 else repr(role)[:77] + "..."
    raise ActionInvalid(
        f"{what} {shown} is not an ARIA role",
        hint="roles are the WAI-ARIA 1.2 roles, or clickable / iframe",
    )
