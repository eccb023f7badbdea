"""The report as one HTML page: inline CSS, figures as base64 PNG, curves as inline SVG, a few
lines of JavaScript for the arm toggles. Nothing is fetched: the file works offline."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

import pandas as pd

from harness.analysis.present.report.tables import Table
from harness.analysis.present.table import cell_text

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;
max-width:1100px;color:#222;padding:0 16px}
h1{font-size:1.5em;margin-bottom:0}h2{margin-top:2em;border-bottom:1px solid #ddd}
.sub{color:#666;margin-top:4px}nav a{margin-right:1em}
.figs{display:grid;grid-template-columns:repeat(auto-fit,minmax(440px,1fr));gap:12px}
figure{margin:0;padding:8px;border:1px solid #eee}figure img{max-width:100%;height:auto}
figcaption{font-size:.9em;color:#444}
table.data{border-collapse:collapse;font-size:.85em;margin:.5em 0;display:block;overflow-x:auto}
table.data th,table.data td{border:1px solid #ddd;padding:2px 6px;text-align:right;
white-space:nowrap}table.data th{background:#f4f4f4}
ul.notes{font-size:.9em;color:#444}pre{background:#f7f7f7;padding:8px;overflow-x:auto;
font-size:.8em;white-space:pre-wrap}code{background:#f3f3f3}
.toggles label{margin-right:1em;white-space:nowrap;cursor:pointer}
.swatch{display:inline-block;width:14px;height:4px;vertical-align:middle;margin-right:4px}
svg.curves{max-width:100%;height:auto;display:block;margin:.5em 0}
svg .frame{fill:none;stroke:#bbb}svg .grid{stroke:#eee}svg .tick{font-size:10px;fill:#555}
svg .label{font-size:11px;fill:#333}svg .title{font-size:12px;fill:#222}
.skipped{color:#a33}
"""

#: Toggles arms; ``#hide=0,2`` in the address hides arms 0 and 2 on load (a link keeps them).
SCRIPT = """
(function () {
  function show(k, on) {
    document.querySelectorAll('g[data-arm="' + k + '"]').forEach(function (g) {
      g.style.display = on ? '' : 'none';
    });
  }
  var boxes = document.querySelectorAll('input[data-arm]');
  boxes.forEach(function (box) {
    box.addEventListener('change', function () { show(box.dataset.arm, box.checked); });
  });
  var m = /hide=([0-9,]+)/.exec(location.hash);
  if (m) {
    m[1].split(',').forEach(function (k) {
      boxes.forEach(function (box) { if (box.dataset.arm === k) { box.checked = false; } });
      show(k, false);
    });
  }
  document.body.dataset.ready = 'yes';
})();
"""


@dataclass(frozen=True, slots=True)
class FigureBlock:
    """A figure as the page shows it."""

    name: str
    """Figure name."""
    description: str
    """What it shows."""
    png: bytes | None
    """The image (None: skipped)."""
    notes: Sequence[str] = ()
    """Its notes, or why it was skipped."""


def table_html(df: pd.DataFrame, ident: str) -> str:
    """An HTML table of ``df``, cells formatted as ``harness analyze`` prints them."""
    head = "".join(f"<th>{escape(str(c))}</th>" for c in df.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(cell_text(v))}</td>" for v in row) + "</tr>"
        for row in df.itertuples(index=False)
    )
    return (
        f'<table class="data" id="{ident}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )


def _notes(notes: Sequence[str]) -> str:
    if not notes:
        return ""
    return '<ul class="notes">' + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>"


def page(
    title: str,
    subtitle: str,
    figures: Sequence[FigureBlock],
    curves: str,
    tables: Sequence[Table],
    provenance: Sequence[tuple[str, str]],
    sql: Sequence[tuple[str, str]],
) -> str:
    """The whole document."""
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>",
        f'<h1>{escape(title)}</h1><p class="sub">{escape(subtitle)}</p>',
        "<nav>"
        + "".join(f'<a href="#{t.key}">{escape(t.title.split(":")[0])}</a>' for t in tables)
        + '<a href="#curves">Loss curves</a><a href="#figures">Figures</a>'
        + '<a href="#provenance">Provenance</a></nav>',
    ]
    for t in tables:
        parts.append(f'<section id="{t.key}"><h2>{escape(t.title)}</h2>')
        parts.append(f"<p>The same table: <code>{escape(t.command)}</code></p>")
        if t.table is not None:
            parts.append(table_html(t.table, f"table-{t.key}"))
        parts.append(_notes(t.notes) + "</section>")
    parts.append(f'<section id="curves"><h2>Loss curves</h2>{curves}</section>')
    parts.append('<section id="figures"><h2>Figures</h2><div class="figs">')
    for f in figures:
        if f.png is None:
            parts.append(
                f'<p class="skipped" data-figure="{escape(f.name)}">{escape(f.name)}: '
                f"not drawn: {escape('; '.join(f.notes))}</p>"
            )
            continue
        data = base64.b64encode(f.png).decode("ascii")
        parts.append(
            f'<figure data-figure="{escape(f.name)}"><img alt="{escape(f.name)}" '
            f'src="data:image/png;base64,{data}"><figcaption><b>{escape(f.name)}</b>: '
            f"{escape(f.description)}{_notes(f.notes)}</figcaption></figure>"
        )
    parts.append("</div></section>")
    parts.append(
        '<section id="provenance"><h2>Provenance</h2><table class="data" '
        'id="table-provenance"><tbody>'
    )
    parts += [f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in provenance]
    parts.append("</tbody></table>")
    for name, text in sql:
        parts.append(f"<h3>SQL: {escape(name)}</h3><pre>{escape(text)}</pre>")
    parts.append(f"</section><script>{SCRIPT}</script></body></html>")
    return "\n".join(parts)
