"""Damaged files of every format end in a DocumentError: never another exception, a hang or a crash."""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from parser_fixtures import docx_bytes, pptx_bytes, text_pdf, xlsx_bytes, zip_bytes

from kbagent.errors import DocumentError
from kbagent.knowledge.parsers import detect_format, parse_document
from kbagent.knowledge.parsers.base import ParseLimits


def _mutations(data: bytes, seed: int, count: int) -> list[bytes]:
    rng = random.Random(seed)
    out = []
    for trial in range(count):
        damaged = bytearray(data)
        if trial % 3 == 0:  # flipped bytes
            for _ in range(rng.randint(1, 20)):
                damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        elif trial % 3 == 1:  # truncated
            damaged = damaged[: rng.randrange(1, len(damaged))]
        else:  # a slice cut out
            start = rng.randrange(len(damaged))
            del damaged[start : start + rng.randint(1, 200)]
        out.append(bytes(damaged))
    return out


SAMPLES: dict[str, Callable[[Path], bytes]] = {
    "a.pdf": text_pdf,
    "a.docx": lambda _: docx_bytes(),
    "a.pptx": lambda _: pptx_bytes(),
    "a.xlsx": lambda _: xlsx_bytes(),
    "a.zip": lambda _: zip_bytes({"x.md": b"# t\n\nhello", "y.csv": b"a,b\n1,2\n"}),
    "a.csv": lambda _: "城市,标准\n北京,600\n".encode("gbk"),
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_random_damage_gives_document_errors_only(name: str, cjk_font: Path) -> None:
    # Small pixel limit: a damaged file that happens to look like an image must not start a long OCR run.
    limits = ParseLimits(max_image_pixels=1_000_000)
    outcomes = {"parsed": 0, "refused": 0}
    for damaged in _mutations(SAMPLES[name](cjk_font), seed=zlib.crc32(name.encode()), count=30):
        try:
            parse_document(damaged, name, limits)
            outcomes["parsed"] += 1  # damage in a part the parser does not need is fine
        except DocumentError as exc:
            assert name in exc.message
            outcomes["refused"] += 1
    assert outcomes["refused"] > 0


def test_zip_with_unknown_version_is_a_document_error(limits: ParseLimits) -> None:
    data = bytearray(zip_bytes({"a.txt": b"hello"}))
    central = data.index(b"PK\x01\x02")
    data[central + 6] = 176  # "needs zip version 17.6 to extract": zipfile raises NotImplementedError
    assert detect_format(bytes(data), "v.zip") == "zip"
    with pytest.raises(DocumentError, match="v.zip"):
        parse_document(bytes(data), "v.zip", limits)


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "WEBP", "TIFF"])
def test_truncated_images_give_document_errors(fmt: str, cjk_font: Path, limits: ParseLimits) -> None:
    from parser_fixtures import encode, text_image

    data = encode(text_image(cjk_font, ["截断 truncated"], width=300, size=20), fmt)
    for fraction in (0.05, 0.2, 0.4, 0.6, 0.8, 0.95):
        with pytest.raises(DocumentError, match="cut.img"):
            parse_document(data[: int(len(data) * fraction)], "cut.img", limits)
