"""Images through OCR: accuracy on clean and degraded mixed Chinese/English text, formats, and pixel limits."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest
from parser_fixtures import degraded_image, encode, text_image

from kbagent.errors import DocumentError
from kbagent.knowledge.parsers import detect_format, ocr, parse_document
from kbagent.knowledge.parsers.base import ParseLimits

LINES = [
    "星河科技员工差旅报销制度（2024 修订版）",
    "Employees must submit travel claims within 30 days.",
    "住宿标准：北京每晚 600 元，成都每晚 450 元。",
    "Contact finance@example.com for questions about GX-2024.",
]


def edit_distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def character_accuracy(read: list[str], truth: list[str]) -> float:
    # Whitespace is left out: OCR drops the space between Chinese and Latin runs, which changes no meaning.
    got = "".join("".join(line.split()) for line in read)
    want = "".join("".join(line.split()) for line in truth)
    return 1 - edit_distance(got, want) / len(want)


def test_edit_distance_counts_what_it_should() -> None:
    assert edit_distance("kitten", "sitting") == 3
    assert character_accuracy(["ab cd"], ["abcx"]) == 0.75


@pytest.mark.slow
@pytest.mark.parametrize("degrade", [False, True], ids=["clean", "degraded"])
def test_ocr_character_accuracy(cjk_serif_font: Path, degrade: bool) -> None:
    image = degraded_image(cjk_serif_font, LINES) if degrade else text_image(cjk_serif_font, LINES)
    lines = ocr.recognize(image)
    assert character_accuracy([ln.text for ln in lines], LINES) >= 0.97
    # Reading order: the lines come back top to bottom.
    assert lines[0].text.startswith("星河科技") and lines[-1].text.startswith("Contact")


@pytest.mark.slow
@pytest.mark.parametrize(("fmt", "name"), [("PNG", "a.png"), ("JPEG", "a.jpg"), ("WEBP", "a.webp"), ("TIFF", "a.tif")])
def test_image_formats_are_read_by_ocr(cjk_font: Path, limits: ParseLimits, fmt: str, name: str) -> None:
    data = encode(text_image(cjk_font, ["发票号码 88012345", "Invoice total 1,280.00"]), fmt)
    assert detect_format(data, "upload.bin") == name.split(".")[1].replace("jpg", "jpeg").replace("tif", "tiff")
    progress: list[tuple[int, int]] = []
    doc = parse_document(data, name, limits, lambda d, t, _: progress.append((d, t)))
    assert all(b.ocr for b in doc.blocks)
    text = "".join(b.text for b in doc.blocks).replace(" ", "")
    assert "发票号码88012345" in text and "Invoicetotal1,280.00" in text
    assert progress == [(1, 1)]


@pytest.mark.slow
def test_multipage_tiff_pages(cjk_font: Path, limits: ParseLimits) -> None:
    import io

    frames = [text_image(cjk_font, [f"第 {n} 页 page {n}"]) for n in (1, 2)]
    buffer = io.BytesIO()
    frames[0].save(buffer, format="TIFF", save_all=True, append_images=frames[1:])
    doc = parse_document(buffer.getvalue(), "scan.tiff", limits)
    assert [(b.page, b.text.replace(" ", "")) for b in doc.blocks] == [(1, "第1页page1"), (2, "第2页page2")]
    with pytest.raises(DocumentError, match=r"2 frames, over the limit of 1 pages \(max_pages\)"):
        parse_document(buffer.getvalue(), "scan.tiff", ParseLimits(max_pages=1))


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG that declares a huge canvas but carries almost no data: refused from its header alone."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00")) + chunk(b"IEND", b"")


def test_pixel_limit_is_checked_before_decoding(limits: ParseLimits) -> None:
    with pytest.raises(DocumentError, match=r"12000 x 12000 pixels, over the limit of 50000000 \(max_image_pixels\)"):
        parse_document(_png_header_only(12_000, 12_000), "huge.png", limits)
    small = encode(text_image_plain(300, 300), "PNG")
    with pytest.raises(DocumentError, match=r"300 x 300 pixels, over the limit of 10000"):
        parse_document(small, "small.png", ParseLimits(max_image_pixels=10_000))


def text_image_plain(width: int, height: int):  # type: ignore[no-untyped-def]
    from PIL import Image

    return Image.new("RGB", (width, height), "white")


def test_pillow_bomb_check_becomes_a_document_error() -> None:
    # Our limit above Pillow's own (2 x MAX_IMAGE_PIXELS): Pillow refuses first, and that too is a DocumentError.
    with pytest.raises(DocumentError, match=r"400000000 pixels, over the limit of 1000000000000 \(max_image_pixels\)"):
        parse_document(_png_header_only(20_000, 20_000), "huge.png", ParseLimits(max_image_pixels=10**12))


def test_corrupt_images(cjk_font: Path, limits: ParseLimits) -> None:
    data = encode(text_image(cjk_font, ["截断的图片"]), "PNG")
    with pytest.raises(DocumentError, match="corrupt or truncated"):
        parse_document(data[: len(data) // 2], "cut.png", limits)
    with pytest.raises(DocumentError, match="not a readable image"):
        parse_document(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, "bad.png", limits)
