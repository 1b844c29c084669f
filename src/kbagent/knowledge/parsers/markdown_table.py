"""Tables as Markdown: the one textual form of a table that both the chunker and a language model read well."""

from __future__ import annotations

from collections.abc import Sequence


def _cell(text: str) -> str:
    # A pipe would end the cell and a newline the row: both are escaped/flattened so the table stays a table.
    return " ".join(text.split()).replace("|", "\\|")


def to_markdown_table(rows: Sequence[Sequence[str]]) -> str:
    """Render rows as a Markdown table; the first row is the header. Short rows are padded with empty cells.

    Returns "" when there is nothing in any cell.
    """
    cleaned = [[_cell(c) for c in row] for row in rows]
    cleaned = [row for row in cleaned if any(row)]
    if not cleaned:
        return ""
    width = max(len(row) for row in cleaned)
    cleaned = [row + [""] * (width - len(row)) for row in cleaned]
    lines = ["| " + " | ".join(cleaned[0]) + " |", "|" + "|".join(["---"] * width) + "|"]
    lines.extend("| " + " | ".join(row) + " |" for row in cleaned[1:])
    return "\n".join(lines)
