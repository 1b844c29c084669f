"""Document parsing throughput and memory: text PDFs, OCR'd (scanned) PDF pages, a sparse spreadsheet.

    python benchmarks/bench_parsers.py [--text-pages 60] [--ocr-pages 4] [--repeat 3]

Fixtures are written in the run (fpdf2 + a CJK font from fonts-noto-cjk, as in the tests). Prints medians over
``--repeat`` runs:

- text PDF pages/s: kbagent's ``parse_pdf`` (layout: lines, headings, tables, running heads) against the baseline
  of PDFium's plain ``get_text_range`` per page on the same file;
- OCR pages/s: ``parse_pdf`` on a scanned PDF (render + OCR + paragraphing) against rapidocr alone on the same
  page images; the one-off model load is timed separately and excluded;
- a workbook with 1,000,000 formatted empty rows against one with 1,000 (the empty-run stop bounds the first);
- peak memory: process max RSS after the text phase and after OCR (native PDFium/onnxruntime memory included),
  and tracemalloc's peak of Python allocations while parsing the text PDF once.
"""

from __future__ import annotations

import argparse
import gc
import io
import resource
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "tests" / "knowledge" / "parsers"))

from parser_fixtures import find_cjk_font, text_image, xlsx_with_empty_rows  # noqa: E402

from kbagent.knowledge.parsers import ocr  # noqa: E402
from kbagent.knowledge.parsers.base import ParseLimits  # noqa: E402
from kbagent.knowledge.parsers.pdf import parse_pdf  # noqa: E402
from kbagent.knowledge.parsers.spreadsheet import parse_xlsx  # noqa: E402

PARAGRAPH_ZH = (
    "员工出差前应当提交出差申请，经部门负责人批准后方可出行。差旅费用包括交通费、住宿费和伙食补助，"
    "报销须在返回后三十日内提交，并附上发票原件。"
)
PARAGRAPH_EN = (
    "Travel claims must be submitted within thirty days of return, with original receipts attached. "
    "Economy class is the default for flights under six hours; exceptions need written approval."
)
SCAN_LINES = [
    "第三章 差旅费用报销标准（2024 修订）",
    "一、住宿：北京、上海每晚不超过 600 元，其他城市 450 元。",
    "二、伙食补助：每天 100 元，按出差天数计算。",
    "Article 3. Meals are reimbursed at CNY 100 per day.",
    "三、交通：高铁二等座或经济舱，超标部分自理。",
    "Receipts must be originals; copies are not accepted.",
    "四、报销须在返回后三十日内提交财务部审核。",
    "Questions: finance@example.com, extension 8021.",
]


def maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def median_time(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def make_text_pdf(font: Path, pages: int) -> bytes:
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.add_font("cjk", fname=str(font), collection_font_number=2 if font.suffix == ".ttc" else 0)
    pdf.set_auto_page_break(False)  # the footer sits low on the page; no overflow onto a near-empty page
    for n in range(1, pages + 1):
        pdf.add_page()
        pdf.set_font("cjk", size=16)
        pdf.start_section(f"第 {n} 节 差旅制度", level=0)
        pdf.cell(text=f"第 {n} 节 差旅制度", new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("cjk", size=10)
        for _ in range(3):
            pdf.multi_cell(0, 5, text=PARAGRAPH_ZH, new_x="LMARGIN", new_y="NEXT")
            pdf.multi_cell(0, 5, text=PARAGRAPH_EN, new_x="LMARGIN", new_y="NEXT")
        with pdf.table(first_row_as_headings=False, width=150, align="LEFT") as table:
            for cells in (
                ("城市", "住宿", "餐补"),
                ("北京", "600", "100"),
                ("成都", "450", "80"),
                ("西安", "400", "80"),
            ):
                row = table.row()
                for cell in cells:
                    row.cell(cell)
        pdf.set_xy(10, 285)
        pdf.cell(text=f"内部资料 第 {n} 页")
    return bytes(pdf.output())


def scan_page(font: Path) -> bytes:
    # An A4 page at 150 dpi (1240 x 1754) holding the lines, as a scanner would deliver it.
    image = text_image(font, SCAN_LINES, width=1240, size=30)
    page = image.crop((0, 0, 1240, 1754))
    page.paste(image, (0, 120))
    buffer = io.BytesIO()
    page.convert("L").save(buffer, format="PNG")
    return buffer.getvalue()


def make_scanned_pdf(font: Path, pages: int) -> tuple[bytes, bytes]:
    from fpdf import FPDF

    png = scan_page(font)
    pdf = FPDF(format="A4")
    for _ in range(pages):
        pdf.add_page()
        pdf.image(io.BytesIO(png), x=0, y=0, w=210, h=297)
    return bytes(pdf.output()), png


def plain_pdfium(data: bytes) -> int:
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(data)
    chars = 0
    for page in doc:
        textpage = page.get_textpage()
        chars += len(textpage.get_text_range())
        textpage.close()
        page.close()
    doc.close()
    return chars


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--text-pages", type=int, default=60)
    parser.add_argument("--ocr-pages", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    font = find_cjk_font()
    if font is None:
        sys.exit("no CJK font under /usr/share/fonts: install fonts-noto-cjk")
    limits = ParseLimits()

    text_pdf = make_text_pdf(font, args.text_pages)
    n = args.text_pages
    base = median_time(lambda: plain_pdfium(text_pdf), args.repeat)
    ours = median_time(lambda: parse_pdf(text_pdf, "bench.pdf", limits), args.repeat)
    tracemalloc.start()
    parsed = parse_pdf(text_pdf, "bench.pdf", limits)
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"text PDF, {n} pages ({len(text_pdf) / 1e6:.2f} MB, {len(parsed.blocks)} blocks), median of {args.repeat}:")
    print(f"  baseline PDFium get_text_range : {n / base:8.1f} pages/s")
    print(f"  kbagent parse_pdf (layout)     : {n / ours:8.1f} pages/s   ({ours / base:.1f}x the baseline's time)")
    print(f"  tracemalloc peak (Python)      : {traced_peak / 1e6:8.1f} MB")
    print(f"  process max RSS so far         : {maxrss_mb():8.0f} MB")

    scanned, page_png = make_scanned_pdf(font, args.ocr_pages)
    from PIL import Image

    page_image = Image.open(io.BytesIO(page_png)).convert("RGB")
    start = time.perf_counter()
    ocr.recognize(page_image)  # loads the models
    load = time.perf_counter() - start
    m = args.ocr_pages
    raw = median_time(lambda: ocr.recognize(page_image), args.repeat)
    full = median_time(lambda: parse_pdf(scanned, "scan.pdf", limits), args.repeat)
    read = parse_pdf(scanned, "scan.pdf", limits)
    print(f"scanned PDF, {m} pages (A4 page images at 150 dpi), median of {args.repeat}:")
    print(f"  OCR model load + first page     : {load:8.2f} s (once per process)")
    print(f"  baseline rapidocr on page image : {1 / raw:8.2f} pages/s ({raw:.2f} s/page)")
    print(f"  kbagent parse_pdf (render+OCR)  : {m / full:8.2f} pages/s ({full / m:.2f} s/page)")
    print(f"  blocks read, all ocr=True       : {len(read.blocks)} ({all(b.ocr for b in read.blocks)})")
    print(f"  process max RSS with OCR engine : {maxrss_mb():8.0f} MB")

    sparse = xlsx_with_empty_rows(1_000_000)
    small = xlsx_with_empty_rows(1_000)
    t_small = median_time(lambda: parse_xlsx(small, "small.xlsx", limits), args.repeat)
    t_sparse = median_time(lambda: parse_xlsx(sparse, "sparse.xlsx", limits), args.repeat)
    print(
        f"workbook with 1,000,000 empty rows ({len(sparse) / 1e6:.1f} MB): {t_sparse * 1000:.0f} ms; "
        f"with 1,000: {t_small * 1000:.0f} ms ({t_sparse / t_small:.1f}x)"
    )


if __name__ == "__main__":
    main()
