// Roles: an element's ARIA role, explicit or implicit, checked against the frozen table
// of roles (a page can't make it hand back another), and the text helpers they share.
// snapshot.py puts this file into snapshot.js where its "@include" line is, inside the
// registry's closure.

    function explicitRole(el) {
      const attr = el.getAttribute("role");
      if (!attr) return null;
      for (const token of attr.trim().toLowerCase().split(/\s+/)) {
        if (ARIA_ROLES.has(token)) return token;
      }
      return null;
    }

    function implicitRole(el, tag) {
      switch (tag) {
        case "A": case "AREA": return el.hasAttribute("href") ? "link" : null;
        case "BUTTON": return "button";
        case "INPUT": {
          const type = (el.getAttribute("type") || "text").toLowerCase();
          switch (type) {
            case "button": case "submit": case "reset": case "image": return "button";
            case "checkbox": return "checkbox";
            case "radio": return "radio";
            case "range": return "slider";
            case "number": return "spinbutton";
            case "hidden": return null;
            case "file": return "button";
            case "color": return null;
            case "search": return el.hasAttribute("list") ? "combobox" : "searchbox";
            default: return el.hasAttribute("list") ? "combobox" : "textbox";
          }
        }
        case "SELECT": return el.multiple || el.size > 1 ? "listbox" : "combobox";
        case "TEXTAREA": return "textbox";
        case "OPTION": return "option";
        case "H1": case "H2": case "H3": case "H4": case "H5": case "H6": return "heading";
        case "IMG": return el.getAttribute("alt") === "" ? null : "img";
        case "UL": case "OL": case "MENU": return "list";
        case "LI": return "listitem";
        case "NAV": return "navigation";
        case "MAIN": return "main";
        case "ASIDE": return "complementary";
        case "HEADER": return el.parentElement?.closest(LANDMARK_PARENTS) ? null : "banner";
        case "FOOTER": return el.parentElement?.closest(LANDMARK_PARENTS) ? null : "contentinfo";
        case "FORM": return "form";
        case "SECTION":
          return el.hasAttribute("aria-label") || el.hasAttribute("aria-labelledby")
            ? "region" : null;
        case "ARTICLE": return "article";
        case "DIALOG": return "dialog";
        case "P": return "paragraph";
        case "TABLE": return "table";
        case "CAPTION": return "caption";
        case "THEAD": case "TBODY": case "TFOOT": return "rowgroup";
        case "TR": return "row";
        case "TD": {
          const table = el.closest("table");
          const r = table && explicitRole(table);
          return r === "grid" || r === "treegrid" ? "gridcell" : "cell";
        }
        case "TH": return el.getAttribute("scope") === "row" ? "rowheader" : "columnheader";
        case "FIELDSET": case "DETAILS": case "OPTGROUP": return "group";
        // A details' summary opens and closes it: a button, as a person uses it (Chromium
        // draws it a disclosure triangle; no ARIA role is written for it).
        case "SUMMARY": return isDisclosure(el) ? "button" : null;
        case "HR": return "separator";
        case "PROGRESS": return "progressbar";
        case "METER": return "meter";
        case "DT": return "term";
        case "DD": return "definition";
        case "BLOCKQUOTE": return "blockquote";
        case "FIGURE": return "figure";
        case "OUTPUT": return "status";
        case "DATALIST": return "listbox";
        case "IFRAME": case "FRAME": return "iframe";
        case "SEARCH": return "search";
        default: return el.isContentEditable && !el.parentElement?.isContentEditable
          ? "textbox" : null;
      }
    }

    // The summary of a details element: its first summary child, the one that toggles it.
    function isDisclosure(el) {
      const details = el.parentElement;
      return !!details && details.tagName === "DETAILS" &&
        details.querySelector(":scope > summary") === el;
    }

    // Only a role of the table, whatever the page did to the built-ins used to find it.
    function roleOf(el) {
      const role = roleFrom(el);
      return typeof role === "string" && ROLE_TABLE[role] === true ? role : null;
    }

    function roleFrom(el) {
      const tag = el.tagName;
      const r = explicitRole(el);
      if (r === "none" || r === "presentation") return null;
      return r || implicitRole(el, tag);
    }

    function norm(text) {
      return text.replace(/\s+/g, " ").trim();
    }

    function isContents(el) {
      return styleOf(el).display === "contents";
    }
