"""The workbench's MyST site template: a small server that renders MyST's page JSON into plain static HTML.

``jupyter book build --html`` (mystmd) starts a site template's server (``template.yml``: ``build.start``) with
``PORT``, ``HOST`` and ``CONTENT_CDN_PORT`` in the environment, fetches every page from it and writes the answers
to ``_build/html``. The usual template, the book theme, is a Remix app that mystmd downloads from GitHub at build
time; this one needs only the Python standard library and nothing from the network. It reads the page JSON from
mystmd's content server (``/config.json``, ``/content/<slug>.json``, externalised outputs under ``/``) and writes
pages whose links are relative (``../<slug>/index.html``, ``../build/<file>``), so that the built site opens from
files as well as from any HTTP server. It never runs a kernel: a notebook page shows the outputs stored in the
notebook. Math is the MathML that mystmd's KaTeX pass puts in each math node (no fonts or scripts needed).

Routes: ``/`` (the project's index page), ``/<slug>``, ``/<slug>.json`` (the page JSON, passed through),
``/myst-theme.css`` (the stylesheet beside this file), ``/robots.txt``, ``/sitemap.xml``, ``/sitemap_style.xsl``
and ``/favicon.ico``. Ready when it prints ``Server started at http://HOST:PORT`` (mystmd waits for that line).
"""

from __future__ import annotations

import html
import http.server
import json
import os
import re
import socket
import struct
import sys
import urllib.request
import zlib
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CSS = HERE / "book.css"
VERDICTS = ("agrees", "disagrees", "undecided", "out_of_scope")  # a table cell holding only one gets its colour
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
INLINE = {"emphasis": "em", "strong": "strong", "delete": "del", "subscript": "sub", "superscript": "sup"}
INLINE |= {"underline": "u", "smallcaps": "small", "blockquote": "blockquote"}
SKIP = {"comment", "mystTarget", "footnoteDefinition"}


def esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


class Page:
    """What the renderer needs besides the tree: where the page lives and how to read an externalised output."""

    def __init__(self, slug: str, index: str, slugs=(), read_asset=None):
        self.slug, self.index, self.slugs = slug, index, set(slugs)
        self.prefix = "" if slug == index else "../"  # every page but the index is <slug>/index.html
        self.read_asset = read_asset or (lambda path: "")

    def href(self, url: str) -> str:
        """A site-absolute URL (``/slug``, ``/slug#id``, ``/file.png``) made relative to this page."""
        if not url.startswith("/") or url.startswith("//"):
            return url
        path, hash_, anchor = url.partition("#")
        stem = path.strip("/")
        if not stem or stem == self.index:
            target = "index.html"
        elif stem in self.slugs:
            target = f"{stem}/index.html"
        else:  # a file mystmd put in its public folder, which the html build copies to build/
            target = f"build/{stem}"
        return self.prefix + target + (hash_ + anchor if hash_ else "")


def text_of(node: dict) -> str:
    if "value" in node and node["type"] in ("text", "inlineCode"):
        return str(node["value"])
    return "".join(text_of(c) for c in node.get("children", []))


def render(nodes: list[dict] | dict, page: Page) -> str:
    """HTML of a MyST (mdast) node or list of nodes; an unknown node shows its children or its text."""
    if isinstance(nodes, dict):
        nodes = [nodes]
    return "".join(_node(n, page) for n in nodes)


def _id(node: dict) -> str:
    return f' id="{esc(node["html_id"])}"' if node.get("html_id") else ""


def _node(n: dict, page: Page) -> str:  # one branch per node type
    t, kids = n.get("type"), n.get("children", [])
    inner = lambda: render(kids, page)  # noqa: E731
    if t in SKIP or n.get("visibility") == "remove":
        return ""
    if t == "text":
        return esc(n.get("value", ""))
    if t in ("root", "block"):
        if t == "block" and n.get("kind") == "notebook-code":
            body = inner()
            if n.get("visibility") == "hide":
                body = f"<details><summary>code cell</summary>{body}</details>"
            return f'<div class="cell code"{_id(n)}>{body}</div>'
        return f'<div class="block"{_id(n)}>{inner()}</div>' if t == "block" else inner()
    if t == "heading":
        depth = min(max(int(n.get("depth", 2)), 1), 6)
        anchor = f' <a class="anchor" href="#{esc(n["html_id"])}">#</a>' if n.get("html_id") else ""
        return f"<h{depth}{_id(n)}>{inner()}{anchor}</h{depth}>"
    if t == "paragraph":
        return f"<p>{inner()}</p>"
    if t in INLINE:
        return f"<{INLINE[t]}>{inner()}</{INLINE[t]}>"
    if t == "inlineCode":
        return f"<code>{esc(n.get('value', ''))}</code>"
    if t == "code":
        if n.get("visibility") == "hide":
            return f"<details><summary>code</summary><pre><code>{esc(n.get('value', ''))}</code></pre></details>"
        return f'<pre class="code"><code>{esc(n.get("value", ""))}</code></pre>'
    if t in ("math", "inlineMath"):
        if n.get("html"):
            return f'<div class="math"{_id(n)}>{n["html"]}</div>' if t == "math" else n["html"]
        return f'<code class="tex">{esc(n.get("value", ""))}</code>'
    if t == "html":
        return str(n.get("value", ""))
    if t in ("link", "crossReference"):
        url = n.get("url", "")
        if t == "crossReference":
            if not n.get("resolved", True) and not url:
                return f'<span class="xref-unresolved">{inner()}</span>'
            url = f"{url}#{n['html_id']}" if n.get("html_id") else url
        external = "" if url.startswith(("/", "#")) else ' rel="noopener"'
        return f'<a href="{esc(page.href(url))}"{external}>{inner() or esc(url)}</a>'
    if t == "image":
        width = f' style="width:{esc(n["width"])}"' if n.get("width") else ""
        alt = esc(n.get("alt") or n.get("title") or "")
        return f'<img src="{esc(page.href(n.get("url", "")))}" alt="{alt}"{width}{_id(n)}>'
    if t == "container":
        return f'<figure class="{esc(n.get("kind", ""))}"{_id(n)}>{inner()}</figure>'
    if t in ("caption", "legend"):
        return f'<figcaption class="{t}">{inner()}</figcaption>'
    if t == "captionNumber":
        return f'<span class="caption-number">{inner()}</span> '
    if t == "list":
        tag = "ol" if n.get("ordered") else "ul"
        start = f' start="{int(n["start"])}"' if n.get("ordered") and n.get("start") not in (None, 1) else ""
        return f"<{tag}{start}>{inner()}</{tag}>"
    if t == "listItem":
        return f"<li>{inner()}</li>"
    if t == "table":
        return f'<div class="table-wrap"><table{_id(n)}>{inner()}</table></div>'
    if t == "tableRow":
        return f"<tr>{inner()}</tr>"
    if t == "tableCell":
        tag = "th" if n.get("header") else "td"
        verdict = text_of(n).strip()
        cls = f' class="verdict {verdict}"' if tag == "td" and verdict in VERDICTS else ""
        align = f' style="text-align:{esc(n["align"])}"' if n.get("align") else ""
        return f"<{tag}{cls}{align}>{inner()}</{tag}>"
    if t == "admonition":
        kind = esc(n.get("kind", "note"))
        return f'<aside class="admonition {kind}"{_id(n)}>{inner()}</aside>'
    if t == "admonitionTitle":
        return f'<p class="admonition-title">{inner()}</p>'
    if t == "thematicBreak":
        return "<hr>"
    if t == "break":
        return "<br>"
    if t == "abbreviation":
        return f'<abbr title="{esc(n.get("title", ""))}">{inner()}</abbr>'
    if t in ("definitionList", "definitionTerm", "definitionDescription"):
        tag = {"definitionList": "dl", "definitionTerm": "dt", "definitionDescription": "dd"}[t]
        return f"<{tag}>{inner()}</{tag}>"
    if t == "outputs":
        return f'<div class="outputs">{inner()}</div>'
    if t == "output":
        return output_html(n, page)
    if kids:
        return inner()
    return esc(n.get("value", ""))


def _content(entry: dict, page: Page) -> str:
    """The text of one mime entry of an output: inline, or read from the file mystmd externalised it to."""
    if entry.get("content") is not None:
        return str(entry["content"])
    return page.read_asset(entry["path"]) if entry.get("path") else ""


def output_html(node: dict, page: Page) -> str:
    """One notebook output as stored in the executed notebook (stream, error, or the richest mime type shown)."""
    out = node.get("jupyter_data") or {}
    kind = out.get("output_type")
    if kind == "stream":
        name = esc(out.get("name", "stdout"))
        return f'<pre class="output stream {name}">{esc(ANSI.sub("", str(out.get("text", ""))))}</pre>'
    if kind == "error":
        trace = "\n".join(out.get("traceback") or [f"{out.get('ename')}: {out.get('evalue')}"])
        return f'<pre class="output error">{esc(ANSI.sub("", trace))}</pre>'
    data = out.get("data") or {}
    for mime in ("image/png", "image/jpeg", "image/gif"):
        if mime in data:
            entry = data[mime]
            src = page.href(entry["path"]) if entry.get("path") else f"data:{mime};base64,{entry.get('content', '')}"
            return f'<div class="output image"><img src="{esc(src)}" alt="output image"></div>'
    if "image/svg+xml" in data:
        return f'<div class="output image">{_content(data["image/svg+xml"], page)}</div>'
    if "text/html" in data:
        return f'<div class="output html">{_content(data["text/html"], page)}</div>'
    if "text/markdown" in data and node.get("children"):
        return f'<div class="output markdown">{render(node["children"], page)}</div>'
    for mime in ("text/markdown", "text/plain"):
        if mime in data:
            return f'<pre class="output text">{esc(ANSI.sub("", _content(data[mime], page)))}</pre>'
    return ""


def page_html(doc: dict, config: dict, slug: str, read_asset=None) -> str:
    """The whole HTML document of one page: the site's navigation, the title and the rendered tree."""
    project = (config.get("projects") or [{}])[0]
    index = project.get("index", "index")
    slugs = [p["slug"] for p in project.get("pages", []) if p.get("slug")]
    page = Page(slug, index, slugs, read_asset)
    front = doc.get("frontmatter") or {}
    title = front.get("title") or slug
    site = project.get("title") or config.get("title") or "Book"
    items = [
        f'<li class="level-0{" current" if slug == index else ""}"><a href="{page.href("/")}">{esc(site)}</a></li>'
    ]
    for p in project.get("pages", []):
        if p.get("slug"):
            here = " current" if p["slug"] == slug else ""
            items.append(
                f'<li class="level-{int(p.get("level", 1))}{here}">'
                f'<a href="{esc(page.href("/" + p["slug"]))}">{esc(p.get("title") or p["slug"])}</a></li>'
            )
        elif p.get("title"):
            items.append(f'<li class="level-{int(p.get("level", 1))} section">{esc(p["title"])}</li>')
    downloads = "".join(
        f' <a class="download" href="{esc(page.href(e["url"]))}" download>{esc(e.get("filename") or "source")}</a>'
        for e in front.get("exports") or []
        if e.get("url") and e.get("format") == "ipynb"
    )
    # "</head >" (a space before ">" is valid HTML): mystmd injects a script before the first "</head>" of every
    # index.html that sends ".../index.html" to ".../" for the book theme's router; under file:// that would show a
    # folder listing instead of the page, and this template has no router to protect.
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} · {esc(site)}</title>"
        f'<link rel="stylesheet" href="{page.prefix}myst-theme.css"><link rel="icon" href="{page.prefix}favicon.ico">'
        "</head >\n<body>"
        f'<nav class="toc"><ul>{"".join(items)}</ul></nav>'
        f'<main class="article"><header><h1 class="title">{esc(title)}</h1>'
        f"{f'<p class=downloads>Download:{downloads}</p>' if downloads else ''}</header>"
        f"{render(doc.get('mdast') or {'type': 'root'}, page)}</main></body></html>\n"
    )


def favicon() -> bytes:
    """A 16 x 16 ICO holding a one-colour PNG (built here: no binary file to ship)."""
    rows = b"".join(b"\x00" + bytes((40, 90, 160)) * 16 for _ in range(16))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 16, 16, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")
    return struct.pack("<HHH", 0, 1, 1) + struct.pack("<BBBBHHII", 16, 16, 0, 0, 1, 32, len(png), 22) + png


SITEMAP_XSL = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<xsl:stylesheet version="1.0" '
    'xmlns:xsl="http://www.w3.org/1999/XSL/Transform"><xsl:template match="/">'
    '<html><body><xsl:copy-of select="."/></body></html></xsl:template></xsl:stylesheet>\n'
)


class Handler(http.server.BaseHTTPRequestHandler):
    cdn = "http://localhost:3100"

    def _get(self, path: str) -> bytes:
        with urllib.request.urlopen(self.cdn + path, timeout=60) as r:
            return r.read()

    def _send(self, body: bytes | str, ctype: str, status: int = 200) -> None:
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        path = self.path.split("?", 1)[0]
        try:
            config = json.loads(self._get("/config.json"))
            project = (config.get("projects") or [{}])[0]
            slugs = [project.get("index", "index")] + [p["slug"] for p in project.get("pages", []) if p.get("slug")]
            if path == "/myst-theme.css":
                return self._send(CSS.read_bytes(), "text/css; charset=utf-8")
            if path == "/favicon.ico":
                return self._send(favicon(), "image/x-icon")
            if path == "/robots.txt":
                return self._send("User-agent: *\nAllow: /\n", "text/plain")
            if path == "/sitemap_style.xsl":
                return self._send(SITEMAP_XSL, "text/xsl")
            if path == "/sitemap.xml":
                urls = "".join(f"<url><loc>/{s}</loc></url>" for s in slugs)
                return self._send(f'<?xml version="1.0"?><urlset>{urls}</urlset>\n', "application/xml")
            slug = path.strip("/") or slugs[0]
            if slug.endswith(".json") and slug[:-5] in slugs:
                return self._send(self._get(f"/content/{slug}"), "application/json")
            if slug not in slugs:
                return self._send("not found", "text/plain", 404)
            doc = json.loads(self._get(f"/content/{slug}.json"))
            read = lambda p: self._get("/" + p.lstrip("/")).decode("utf-8", "replace")  # noqa: E731
            return self._send(page_html(doc, config, slug, read), "text/html; charset=utf-8")
        except Exception as err:  # one line on stderr, which mystmd shows; the page answers 500
            print(f"workbench theme: {path}: {type(err).__name__}: {err}", file=sys.stderr, flush=True)
            return self._send(f"error: {err}", "text/plain", 500)

    def log_message(self, *args: Any) -> None:  # quiet: mystmd echoes every line the server prints
        pass


def main() -> None:
    host, port = os.environ.get("HOST", "localhost"), int(os.environ.get("PORT", "3000"))
    Handler.cdn = f"http://localhost:{os.environ.get('CONTENT_CDN_PORT', '3100')}"
    family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]  # where mystmd connects
    server_class = type("Server", (http.server.ThreadingHTTPServer,), {"address_family": family})
    server = server_class(address[:2], Handler)
    print(f"Server started at http://{host}:{port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
