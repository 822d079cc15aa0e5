"""Sphinx extension that keeps the built site self-contained (no CDN, works offline).

Jupyter Book 1 always loads ``sphinx_thebe``, which writes a reference to
``https://unpkg.com/thebe`` and a Binder configuration into every page even
though this book has no launch buttons. This extension (listed under
``sphinx.extra_extensions`` in ``_config.yml``):

- drops thebe's scripts, stylesheet and per-page configuration blocks;
- emits a Sphinx warning, which ``jupyter-book build -W`` turns into a failed
  build, for any script or stylesheet of a page that points at another host
  (an ``http://``, ``https://`` or protocol-relative ``//`` URL).

The browser check in ``tests/test_site.py`` verifies the result in Chromium.
"""
from __future__ import annotations

import re

from sphinx.util import logging

logger = logging.getLogger(__name__)

_THEBE_FILES = ("sphinx-thebe.js", "sphinx-thebe.css")
_THEBE_BODY = re.compile(
    r"\s*<script type=\"text/x-thebe-config\">.*?</script>\s*"
    r"(?:<script>kernelName = '[^']*'</script>\s*)?",
    re.S,
)
_REMOTE = re.compile(r"^(?:[a-z][a-z0-9+.-]*:)?//", re.I)


def _filename(asset) -> str:
    return str(getattr(asset, "filename", asset) or "")


def _is_thebe(asset) -> bool:
    name = _filename(asset)
    body = (getattr(asset, "attributes", {}) or {}).get("body", "") or ""
    return name.endswith(_THEBE_FILES) or "THEBE_JS_URL" in body or "unpkg.com/thebe" in name


def _page_context(app, pagename, templatename, context, doctree):
    for key in ("script_files", "css_files"):
        assets = context.get(key)
        if not assets:
            continue
        kept = [a for a in assets if not _is_thebe(a)]
        for a in kept:
            if _REMOTE.match(_filename(a)):
                logger.warning(
                    "page %s loads %s from another host; the site must be self-contained "
                    "(serve it from the site, as _mathjax/ does for MathJax)", pagename, _filename(a),
                    location=pagename,
                )
        context[key] = kept
    if "body" in context and "x-thebe-config" in context["body"]:
        context["body"] = _THEBE_BODY.sub("\n", context["body"])


def setup(app):
    # after sphinx_thebe and the theme have filled the page context
    app.connect("html-page-context", _page_context, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
