"""Rendering of the workflow report: the Jinja2 environment and filters of ``glfs_workflow/templates/``.

Used by :mod:`glfs_workflow.report`; not part of the stable API.  The page is
rendered with autoescape (every value is escaped unless a filter marks it as
HTML: the tables, which pandas escapes, and the figures); the markdown without.
"""

from __future__ import annotations

import base64
import html
import json
import re

import numpy as np
from jinja2.ext import Extension


class JoinLines(Extension):
    """Remove every line break, with the indentation after it, from ``*.html`` templates before compiling.

    The templates' line breaks and indentation are layout for their readers; the page's own
    whitespace is written explicitly (a space inside a line).  ``*.md`` and ``*.css`` templates
    keep their line breaks.
    """

    def preprocess(self, source, name, filename=None):
        if name is not None and name.endswith(".html"):
            return re.sub(r"\n[ \t]*", "", source)
        return source


def _num(x, digits=3) -> str:
    """x with ``digits`` decimals; "n/a" for None, NaN or infinity."""
    return "n/a" if x is None or not np.isfinite(float(x)) else f"{float(x):.{digits}f}"


def _and_list(items) -> str:
    """ "a", "a and b", "a, b and c"; "none" for no items."""
    items = [str(i) for i in items]
    if not items:
        return "none"
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " and " + items[-1]


def _table(df, float_format="{:.3f}", index=False):
    """A DataFrame as an HTML table (pandas, cells escaped), or "(empty)"."""
    from markupsafe import Markup

    if df is None or len(df) == 0:
        return Markup("<p><em>(empty)</em></p>")
    return Markup(
        df.to_html(index=index, float_format=lambda x: float_format.format(x), border=0, na_rep="", escape=True)
    )


def _escape_html(value):
    """Autoescape with the html module's entities (&quot;, &#x27;), as the report always wrote them."""
    from markupsafe import Markup

    if hasattr(value, "__html__"):
        return value
    return Markup(html.escape(str(value)))


def environment(autoescape: bool):
    """The Jinja2 environment of the templates: autoescaped for the page, plain for the markdown.

    Line breaks and the indentation after them are the templates' layout, not the output's: they
    are removed before compiling every ``*.html`` template (:class:`JoinLines`), so the page's
    whitespace is exactly what the templates write.  ``*.md`` and ``*.css`` keep theirs.
    """
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("glfs_workflow", "templates"),
        autoescape=autoescape,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        extensions=[JoinLines],
        finalize=_escape_html if autoescape else None,
    )
    env.filters.update(
        num=_num,
        and_list=_and_list,
        table=_table,
        g3=lambda x: f"{float(x):.3g}",
        fmt=lambda x, spec: format(x, spec),
        json=json.dumps,
        b64=lambda b: base64.b64encode(b).decode("ascii"),
    )
    return env


def render_html(ctx: dict) -> str:
    """The report page (templates/report.html) of a context from glfs_workflow.report.collect."""
    return environment(True).get_template("report.html").render(ctx)


def render_markdown(ctx: dict) -> str:
    """which_method.md (templates/which_method.md): the which-method answers of a context, as markdown."""
    return environment(False).get_template("which_method.md").render(ctx)
