"""Spreadsheets: .xlsx through openpyxl (read-only, streaming) and .csv through the csv module.

Each data row becomes one atomic ``row`` block that carries its column names, "列名: 值; 列名: 值", so a question
about one row finds exactly that row; each sheet opens with its name as a level-1 heading.

Header row: the first non-empty row is the header when its filled cells are all text (not numbers or dates);
otherwise columns are named by letter (A, B, ...). A lone cell above a wider row is a caption, kept as a paragraph.

Bounds: rows are streamed, never counted in advance (a sheet's declared dimensions can lie), more than
``limits.max_rows`` data rows is an error, and a sheet ends after a run of ``EMPTY_RUN_LIMIT`` empty rows, so a
sheet with a million formatted but empty rows costs milliseconds. Data after such a gap is not read; the result's
``meta["warnings"]`` says where a sheet was cut.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections.abc import Iterable, Iterator
from typing import Any

from kbagent.errors import DocumentError
from kbagent.knowledge.parsers import zip_limits
from kbagent.knowledge.parsers.base import Block, ParsedDocument, ParseLimits, Progress
from kbagent.knowledge.parsers.encoding import decode_text

EMPTY_RUN_LIMIT = 10_000
_MAX_COLUMNS = 1000  # cells past this column are ignored: no real table has them, a hostile one would be slow


def parse_xlsx(data: bytes, name: str, limits: ParseLimits, progress: Progress | None = None) -> ParsedDocument:
    """Read every worksheet of an .xlsx (cached values of formulas, not the formulas).

    Raises DocumentError when the file is not a readable workbook, its ZIP is over the limits, or it has more than
    ``limits.max_rows`` data rows in all.
    """
    from openpyxl import load_workbook

    zip_limits.check_container(zip_limits.open_zip(data, name), name, limits)
    try:
        workbook = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises KeyError, lxml and zip errors alike on a damaged package
        raise DocumentError(f"{name}: not a readable Excel workbook ({type(exc).__name__}: {exc})") from exc
    reader = _RowReader(name, limits)
    try:
        sheets = workbook.worksheets
        for number, sheet in enumerate(sheets, start=1):
            if hasattr(sheet, "reset_dimensions"):
                sheet.reset_dimensions()  # the stored dimension may claim XFD1048576; read what is there
            rows = sheet.iter_rows(values_only=True) if hasattr(sheet, "iter_rows") else iter(())
            reader.read_sheet(sheet.title, rows)
            if progress is not None:
                progress(number, len(sheets), f"{name} sheet {sheet.title}")
    except DocumentError:
        raise
    except Exception as exc:
        raise DocumentError(f"{name}: a worksheet is damaged ({type(exc).__name__}: {exc})") from exc
    finally:
        workbook.close()
    return reader.result("xlsx")


def parse_csv(data: bytes, name: str, limits: ParseLimits, progress: Progress | None = None) -> ParsedDocument:
    """Read a CSV (delimiter sniffed among , ; tab |; encoding from a BOM, UTF-8, or detected: GBK/GB18030...).

    Raises DocumentError for binary data, undecodable text, a malformed field, or more than ``limits.max_rows``
    data rows.
    """
    text, _ = decode_text(data, name)
    sample = text[:8192]
    try:
        dialect: Any = csv.Sniffer().sniff(sample, delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    reader = _RowReader(name, limits)
    try:
        reader.read_sheet(None, csv.reader(io.StringIO(text, newline=""), dialect))
    except csv.Error as exc:
        raise DocumentError(f"{name}: malformed CSV ({exc})") from exc
    if progress is not None:
        progress(1, 1, name)
    return reader.result("csv")


class _RowReader:
    def __init__(self, name: str, limits: ParseLimits) -> None:
        self.name = name
        self.limits = limits
        self.blocks: list[Block] = []
        self.rows = 0
        self.warnings: list[str] = []

    def read_sheet(self, title: str | None, rows: Iterable[Iterable[Any]]) -> None:
        if title is not None:
            self.blocks.append(Block(title, kind="heading", level=1))
        pending = self._non_empty(title, rows)
        first = next(pending, None)
        if first is None:
            return
        second = next(pending, None)
        if second is not None and len([c for c in first if c]) == 1 and len([c for c in second if c]) >= 2:
            self.blocks.append(Block(next(c for c in first if c)))  # a caption above the table
            first, second = second, next(pending, None)
        header: list[str]
        if second is not None and _is_header(first):
            header = [c or _column_letter(i) for i, c in enumerate(first)]
            data: Iterator[list[str]] = _chain(second, pending)
        else:
            header = []
            data = _chain(first, _chain(second, pending))
        for row in data:
            self.rows += 1
            if self.rows > self.limits.max_rows:
                raise DocumentError(f"{self.name}: more than {self.limits.max_rows} rows, over the limit (max_rows)")
            parts = [
                f"{header[i] if i < len(header) else _column_letter(i)}: {value}"
                for i, value in enumerate(row)
                if value
            ]
            self.blocks.append(Block("; ".join(parts), kind="row", atomic=True))

    def _non_empty(self, title: str | None, rows: Iterable[Iterable[Any]]) -> Iterator[list[str]]:
        empty_run = 0
        for number, raw in enumerate(rows, start=1):
            cells = [_cell_text(v) for _, v in zip(range(_MAX_COLUMNS), raw, strict=False)]
            if not any(cells):
                empty_run += 1
                if empty_run >= EMPTY_RUN_LIMIT:
                    where = f"sheet {title!r}" if title else "the file"
                    self.warnings.append(
                        f"{where}: stopped at row {number} after {EMPTY_RUN_LIMIT} empty rows; later rows not read"
                    )
                    return
                continue
            empty_run = 0
            while cells and not cells[-1]:
                cells.pop()
            yield cells

    def result(self, fmt: str) -> ParsedDocument:
        if not any(b.kind == "row" for b in self.blocks):
            raise DocumentError(f"{self.name}: no rows with data")
        return ParsedDocument(format=fmt, blocks=self.blocks, meta={"rows": self.rows, "warnings": self.warnings})


def _chain(first: list[str] | None, rest: Iterator[list[str]]) -> Iterator[list[str]]:
    if first is not None:
        yield first
    yield from rest


def _is_header(cells: list[str]) -> bool:
    filled = [c for c in cells if c]
    return bool(filled) and all(not _looks_numeric(c) for c in filled)


def _looks_numeric(text: str) -> bool:
    cleaned = text.replace(",", "").replace("%", "").replace("¥", "").replace("$", "").strip()
    try:
        float(cleaned)
    except ValueError:
        return len(text) == 10 and text[4] == "-" and text[7] == "-" and text[:4].isdigit()  # an ISO date
    return True


def _cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, dt.datetime):
        return value.date().isoformat() if value.time() == dt.time() else value.isoformat(sep=" ")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return " ".join(str(value).split())


def _column_letter(index: int) -> str:
    letters = ""
    index += 1
    while index:
        index, rem = divmod(index - 1, 26)
        letters = chr(65 + rem) + letters
    return letters
