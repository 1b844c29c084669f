"""Documents written at test time with real libraries (fpdf2, python-docx, openpyxl, python-pptx, Pillow).

Nothing binary is committed: each builder returns the bytes of a file whose content the tests know exactly.
Chinese text needs a CJK font; ``cjk_font`` finds Debian's fonts-noto-cjk (installed by scripts/ci/install-system.sh).
"""

from __future__ import annotations

import glob
import io
import random
import zipfile
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw, ImageFilter, ImageFont

FONT_GLOBS = ("NotoSansCJK-Regular.tt[cf]", "NotoSerifCJK-Regular.tt[cf]", "NotoSansCJK*.tt[cf]", "*CJK*.tt[cf]")


def find_cjk_font(serif: bool = False) -> Path | None:
    """A CJK font file under /usr/share/fonts, or None (the tests then skip, saying which package to install)."""
    globs = ("NotoSerifCJK-Regular.tt[cf]", *FONT_GLOBS) if serif else FONT_GLOBS
    for pattern in globs:
        found = sorted(glob.glob(f"/usr/share/fonts/**/{pattern}", recursive=True))
        if found:
            return Path(found[0])
    return None


# ---- PDF ------------------------------------------------------------------------------------------------------


def new_pdf(font: Path) -> Any:
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    # Index 2 of the Noto CJK collections is the Simplified Chinese face.
    pdf.add_font("cjk", fname=str(font), collection_font_number=2 if font.suffix == ".ttc" else 0)
    pdf.set_auto_page_break(False)
    return pdf


def _footer(pdf: Any, number: int) -> None:
    pdf.set_font("cjk", size=9)
    pdf.set_xy(10, 285)
    pdf.cell(text=f"内部资料 第 {number} 页")


def text_pdf(font: Path, password: str | None = None) -> bytes:
    """Three pages: bookmarked headings of two sizes, paragraphs, a 3 x 3 table, a running footer on each page."""
    pdf = new_pdf(font)
    pdf.add_page()
    pdf.set_font("cjk", size=20)
    pdf.start_section("第一章 总则", level=0)
    pdf.set_xy(10, 20)
    pdf.cell(text="第一章 总则")
    pdf.set_font("cjk", size=11)
    pdf.set_xy(10, 35)
    pdf.multi_cell(
        180,
        6,
        text="本制度适用于星河科技有限公司全体员工。员工出差前应当提交出差申请，经部门负责人批准后方可出行。",
    )
    pdf.set_xy(10, 60)
    with pdf.table(first_row_as_headings=False, col_widths=(50, 50, 50), width=150, align="LEFT") as table:
        for cells in (("城市", "住宿标准", "餐补"), ("北京", "600元", "100元"), ("成都", "450元", "80元")):
            row = table.row()
            for cell in cells:
                row.cell(cell)
    _footer(pdf, 1)

    pdf.add_page()
    pdf.set_font("cjk", size=15)
    pdf.start_section("1.1 报销范围", level=1)
    pdf.set_xy(10, 20)
    pdf.cell(text="1.1 报销范围")
    pdf.set_font("cjk", size=11)
    pdf.set_xy(10, 32)
    pdf.multi_cell(180, 6, text="交通费、住宿费和市内交通费可以报销。报销须在返回后三十日内提交。")
    _footer(pdf, 2)

    pdf.add_page()
    pdf.set_font("cjk", size=20)
    pdf.set_xy(10, 20)
    pdf.cell(text="Chapter 2 Travel Insurance")
    pdf.set_font("cjk", size=11)
    pdf.set_xy(10, 35)
    pdf.multi_cell(180, 6, text="Every employee travelling abroad is covered by the group insurance policy GX-2024.")
    _footer(pdf, 3)
    if password is not None:
        pdf.set_encryption(owner_password="owner-" + password, user_password=password)
    return bytes(pdf.output())


def scanned_pdf(font: Path, lines: list[str]) -> bytes:
    """One page whose only content is a picture of ``lines``: no text layer, so only OCR can read it."""
    pdf = new_pdf(font)
    pdf.add_page()
    picture = text_image(font, lines, width=1400, size=40)
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    pdf.image(io.BytesIO(buffer.getvalue()), x=10, y=10, w=190)
    return bytes(pdf.output())


# ---- images ---------------------------------------------------------------------------------------------------


def text_image(font: Path, lines: list[str], width: int = 1200, size: int = 32) -> Image.Image:
    face = ImageFont.truetype(str(font), size, index=2 if font.suffix == ".ttc" else 0)
    line_height = int(size * 1.9)
    image = Image.new("RGB", (width, line_height * len(lines) + 2 * size), "white")
    draw = ImageDraw.Draw(image)
    for i, line in enumerate(lines):
        draw.text((size, size + i * line_height), line, fill="black", font=face)
    return image


def degraded_image(font: Path, lines: list[str]) -> Image.Image:
    """Small serif text, rotated 1.5 degrees, blurred, saved as a low-quality JPEG and read back."""
    image = text_image(font, lines, width=900, size=20)
    image = image.rotate(1.5, resample=Image.Resampling.BICUBIC, expand=True, fillcolor="white")
    image = image.filter(ImageFilter.GaussianBlur(0.7))
    noisy = image.copy()
    rng = random.Random(7)
    pixels = noisy.load()
    assert pixels is not None
    for _ in range(noisy.width * noisy.height // 50):  # salt-and-pepper specks on 2% of pixels
        x, y = rng.randrange(noisy.width), rng.randrange(noisy.height)
        value = rng.choice((0, 255))
        pixels[x, y] = (value, value, value)
    buffer = io.BytesIO()
    noisy.save(buffer, format="JPEG", quality=35)
    return Image.open(io.BytesIO(buffer.getvalue())).convert("RGB")


def encode(image: Image.Image, fmt: str) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt)
    return buffer.getvalue()


# ---- Office -----------------------------------------------------------------------------------------------------


def docx_bytes() -> bytes:
    from docx import Document

    document = Document()
    document.sections[0].header.paragraphs[0].text = "页眉：机密文件 HEADER-TEXT"
    document.sections[0].footer.paragraphs[0].text = "页脚 FOOTER-TEXT"
    document.add_heading("员工手册", level=1)
    document.add_paragraph("欢迎加入星河科技。本手册说明公司的基本制度。")
    document.add_heading("考勤制度", level=2)
    document.add_paragraph("工作时间为每周一至周五，上午九点至下午六点。")
    document.add_paragraph("迟到三次以上扣除当月全勤奖", style="List Bullet")
    document.add_paragraph("请假须提前一天在系统中申请", style="List Bullet")
    table = document.add_table(rows=3, cols=3)
    for r, cells in enumerate((("假期类型", "天数", "是否带薪"), ("年假", "10", "是"), ("病假", "5", "部分"))):
        for c, text in enumerate(cells):
            table.cell(r, c).text = text
    document.add_heading("Security", level=2)
    document.add_paragraph("Badges must be worn at all times inside the office.")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def pptx_bytes() -> bytes:
    from pptx import Presentation
    from pptx.util import Inches

    presentation = Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[1])
    slide.shapes.title.text = "季度销售回顾"
    slide.placeholders[1].text_frame.text = "华东区销售额增长 23%"
    slide.notes_slide.notes_text_frame.text = "强调华东区的增长来自新客户"
    slide = presentation.slides.add_slide(presentation.slide_layouts[5])
    slide.shapes.title.text = "Regional figures"
    rows = (("Region", "Revenue"), ("East", "1200"), ("West", "800"))
    frame = slide.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(6), Inches(2))
    for r, cells in enumerate(rows):
        for c, text in enumerate(cells):
            frame.table.cell(r, c).text = text
    slide = presentation.slides.add_slide(presentation.slide_layouts[6])  # blank: no title
    box = slide.shapes.add_textbox(Inches(1), Inches(1), Inches(6), Inches(1))
    box.text_frame.text = "Thank you 谢谢"
    buffer = io.BytesIO()
    presentation.save(buffer)
    return buffer.getvalue()


def xlsx_bytes() -> bytes:
    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "员工名单"
    sheet.append(["2024 年员工名单"])
    sheet.append(["姓名", "部门", "工号", "入职日期"])
    sheet.append(["张三", "财务部", 1001, "2020-03-01"])
    sheet.append([None, None, None, None])
    sheet.append(["李四", "研发部", 1002, "2021-07-15"])
    numbers = workbook.create_sheet("Numbers")
    numbers.append([1, 2, 3])
    numbers.append([4, 5, 6])
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def xlsx_with_empty_rows(empty_rows: int, data_after_gap: bool = False) -> bytes:
    """A workbook whose sheet XML holds ``empty_rows`` formatted but empty rows after two data rows, and a
    dimension claiming the whole grid (A1:XFD1048576), as files saved by some tools do."""
    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.append(["名称", "数量"])
    sheet.append(["苹果", 3])
    buffer = io.BytesIO()
    workbook.save(buffer)
    source = zipfile.ZipFile(io.BytesIO(buffer.getvalue()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "xl/worksheets/sheet1.xml":
                xml = data.decode()
                xml = xml.replace('<dimension ref="A1:B2"/>', '<dimension ref="A1:XFD1048576"/>')
                filler = "".join(f'<row r="{r}" ht="15" customHeight="1"/>' for r in range(3, 3 + empty_rows))
                if data_after_gap:
                    last = 3 + empty_rows
                    filler += f'<row r="{last}"><c r="A{last}" t="inlineStr"><is><t>迟到的梨</t></is></c></row>'
                xml = xml.replace("</sheetData>", filler + "</sheetData>")
                data = xml.encode()
            target.writestr(info, data)
    return out.getvalue()


# ---- archives ---------------------------------------------------------------------------------------------------


def zip_bytes(members: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, data in members.items():
            archive.writestr(zipfile.ZipInfo(name), data, compress_type=compression)
    return buffer.getvalue()
