"""HTML (.html, .htm, or any file whose content is HTML) through selectolax's lexbor engine.

Headings h1-h6 keep their level; paragraphs, list items and tables (as Markdown tables) come out in reading
order; ``<pre>`` is code. Page furniture that is not content (script, style, nav, footer, forms, embedded
media) is dropped. ``<title>`` is the document title. The charset is read from a BOM, then the page's own
``<meta charset>`` / ``http-equiv`` declaration, then detected (see ``encoding.py``).
"""

from __future__ import annotations

import re

from selectolax.lexbor import LexborHTMLParser, LexborNode

from kbagent.errors import DocumentError
from kbagent.knowledge.parsers.base import Block, BlockKind, ParsedDocument, ParseLimits, Progress
from kbagent.knowledge.parsers.encoding import decode_text
from kbagent.knowledge.parsers.markdown_table import to_markdown_table

# Declared charset in the first bytes: <meta charset="gbk"> or <meta http-equiv=... content="...; charset=gbk">.
_META_CHARSET = re.compile(rb"<meta[^>]+charset\s*=\s*[\"']?\s*([a-zA-Z0-9_\-]+)", re.I)
_DROP = "script, style, noscript, template, nav, footer, form, svg, iframe, object, embed, canvas, button, select"
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
# Elements that end a run of inline text and are handled as blocks of their own.
_BLOCKS = frozenset(
    """address article aside blockquote body center dd details dialog dir div dl dt fieldset figcaption figure
    header hgroup hr li main menu ol p pre section summary table tbody thead tfoot tr td th ul h1 h2 h3 h4 h5 h6
    caption""".split()
)
# The HTML5 tree builder takes time quadratic in the nesting depth of block elements (each start tag searches
# the open elements for a <p> to close): 100,000 nested <div> took over a minute here, 5,000 took 0.1 s.
# Real pages nest a few dozen deep. Inline elements (<b>, <span>, unknown tags) do not have this cost.
MAX_HTML_NESTING = 4000
_CONTAINER_TAG = re.compile(
    r"<(/?)(?:address|article|aside|blockquote|center|details|dialog|dir|div|dl|fieldset|figcaption|figure"
    r"|footer|header|hgroup|main|menu|nav|ol|section|summary|table|ul)\b",
    re.I,
)
# Nesting beyond these depths is flattened to text: real pages stay far below them, and a hostile file must
# not exhaust Python's recursion limit or blow up into quadratic indentation.
MAX_DEPTH = 100
MAX_LIST_DEPTH = 32
MAX_INDENT = 8
# <br> becomes this private-use character so that it survives the collapsing of source whitespace.
_BREAK = "\ue000"
_SPACES = re.compile(r"\s+")


def parse_html(data: bytes, name: str, limits: ParseLimits, progress: Progress | None = None) -> ParsedDocument:
    """Parse an HTML file; raises DocumentError if it is binary or undecodable."""
    declared = _META_CHARSET.search(data[:4096])
    text, encoding = decode_text(data, name, declared.group(1).decode("ascii") if declared else None)
    _check_nesting(text, name)
    tree = LexborHTMLParser(text)
    title_node = tree.css_first("title")
    title = _squash(title_node.text()) if title_node is not None else ""
    for node in tree.css(_DROP):
        node.decompose()
    for br in tree.css("br"):
        br.replace_with(_BREAK)
    blocks: list[Block] = []
    root = tree.body or tree.root
    if root is not None:
        _Walker(blocks).walk(root)
    return ParsedDocument(format="html", blocks=blocks, title=title or None, meta={"encoding": encoding})


class _Walker:
    def __init__(self, out: list[Block]) -> None:
        self.out = out
        self.inline: list[str] = []

    def walk(self, node: LexborNode) -> None:
        self._children(node, 0)
        self._flush()

    def _children(self, node: LexborNode, depth: int) -> None:
        for child in node.iter(include_text=True):
            tag = child.tag
            if tag == "-text":
                self.inline.append(child.text(deep=False))
            elif tag is None or tag.startswith("-"):
                continue  # comments, doctype
            elif tag in _BLOCKS:
                self._flush()
                self._block(child, tag, depth + 1)
            else:
                self.inline.append(child.text(deep=True))

    def _block(self, node: LexborNode, tag: str, depth: int) -> None:
        if tag in _HEADINGS:
            self._emit(_squash(node.text()), "heading", _HEADINGS[tag])
        elif tag == "p":
            self._emit(_squash(node.text()), "paragraph")
        elif tag in ("ul", "ol", "dl", "menu", "dir"):
            lines: list[str] = []
            _list_lines(node, 0, lines)
            self._emit("\n".join(lines), "list")
        elif tag == "table":
            self._emit(to_markdown_table(_table_rows(node)), "table")
        elif tag == "pre":
            self._emit(node.text().replace(_BREAK, "\n").strip("\n"), "code")
        elif tag == "hr":
            return
        elif depth > MAX_DEPTH:  # hostile nesting: keep the text, stop descending (no recursion overflow)
            self._emit(_squash(node.text()), "paragraph")
        else:  # containers: div, section, article, blockquote, li outside a list, ...
            self._children(node, depth)
            self._flush()

    def _flush(self) -> None:
        text = _squash("".join(self.inline))
        self.inline.clear()
        self._emit(text, "paragraph")

    def _emit(self, text: str, kind: BlockKind, level: int = 0) -> None:
        if text.strip():
            self.out.append(Block(text, kind, level=level))


def _check_nesting(text: str, name: str) -> None:
    depth = deepest = 0
    for tag in _CONTAINER_TAG.finditer(text):
        if tag.group(1):
            depth = max(0, depth - 1)
        else:
            depth += 1
            deepest = max(deepest, depth)
    if deepest > MAX_HTML_NESTING:
        raise DocumentError(f"{name}: HTML elements are nested {deepest} deep, over the limit of {MAX_HTML_NESTING}")


def _list_lines(node: LexborNode, depth: int, lines: list[str]) -> None:
    ordered = node.tag == "ol"
    start = (node.attributes.get("start") or "1").strip()
    number = int(start) if ordered and start.isdigit() else 1
    for item in node.iter():
        if item.tag not in ("li", "dt", "dd"):
            continue
        own: list[str] = []
        nested: list[LexborNode] = []
        for child in item.iter(include_text=True):
            if child.tag in ("ul", "ol", "dl") and depth < MAX_LIST_DEPTH:
                nested.append(child)
            elif child.tag == "-text":
                own.append(child.text(deep=False))
            elif child.tag is not None and not child.tag.startswith("-"):
                own.append(" " + child.text(deep=True) + " " if child.tag in _BLOCKS else child.text(deep=True))
        marker = f"{number}. " if ordered else ("" if item.tag == "dt" else "- ")
        number += 1
        text = _squash("".join(own)).replace("\n", " ")
        if text:
            lines.append("  " * min(depth, MAX_INDENT) + marker + text)
        for sub in nested:
            _list_lines(sub, depth + 1, lines)


def _table_rows(table: LexborNode) -> list[list[str]]:
    rows: list[list[str]] = []
    for tr in table.css("tr"):
        # Rows of a table nested in a cell belong to that cell's text, not to this table.
        if _closest_table(tr) != table.mem_id:
            continue
        rows.append([_squash(cell.text(separator=" ")) for cell in tr.iter() if cell.tag in ("td", "th")])
    return rows


def _closest_table(node: LexborNode) -> int | None:
    parent = node.parent
    while parent is not None and parent.tag != "table":
        parent = parent.parent
    return parent.mem_id if parent is not None else None


def _squash(text: str) -> str:
    """Collapse HTML whitespace (source line breaks included) to single spaces; a <br> becomes a line break."""
    lines = (_SPACES.sub(" ", line).strip() for line in text.split(_BREAK))
    return "\n".join(line for line in lines if line)
