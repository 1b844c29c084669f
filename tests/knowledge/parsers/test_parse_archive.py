"""ZIP archives: members parsed in memory through the registry; bombs, hostile names and deep nesting refused."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest
from parser_fixtures import docx_bytes, xlsx_bytes, zip_bytes

from kbagent.errors import DocumentError
from kbagent.knowledge.parsers import parse_document
from kbagent.knowledge.parsers.archive import ArchiveRefused
from kbagent.knowledge.parsers.base import ParseLimits


def test_members_are_parsed_under_their_names(limits: ParseLimits) -> None:
    data = zip_bytes(
        {
            "docs/handbook.docx": docx_bytes(),
            "docs/staff.xlsx": xlsx_bytes(),
            "readme.md": "# 说明\n\n归档中的说明文件。\n".encode(),
            "broken.pdf": b"%PDF-1.7\n" + b"\x00garbage" * 50,
            "tool.exe": b"MZ\x90\x00" + b"\x00" * 100,
            "__MACOSX/._readme.md": b"\x00\x05\x16\x07",
        }
    )
    doc = parse_document(data, "bundle.zip", limits)
    assert doc.format == "zip"
    top = [b.text for b in doc.blocks if b.kind == "heading" and b.level == 1]
    assert top == ["docs/handbook.docx", "docs/staff.xlsx", "readme.md"]
    # A member's own headings move one level down, below the member's name.
    assert ("heading", 2, "员工手册") in [(b.kind, b.level, b.text) for b in doc.blocks]
    assert ("heading", 3, "考勤制度") in [(b.kind, b.level, b.text) for b in doc.blocks]
    assert "姓名: 张三; 部门: 财务部; 工号: 1001; 入职日期: 2020-03-01" in [b.text for b in doc.blocks]
    assert ("heading", 2, "说明") in [(b.kind, b.level, b.text) for b in doc.blocks]
    skipped = {s["member"]: s["reason"] for s in doc.meta["skipped"]}
    assert set(skipped) == {"broken.pdf", "tool.exe"}
    assert "corrupt" in skipped["broken.pdf"] and "unsupported" in skipped["tool.exe"]


def test_gbk_member_names_are_decoded(limits: ParseLimits) -> None:
    import io

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        info = zipfile.ZipInfo("placehol.txt")
        archive.writestr(info, "内容".encode())
    # Rewrite the stored name as GBK bytes without the UTF-8 flag, as Windows' built-in zip does in China.
    gbk_name = "制度说明.txt".encode("gbk")
    assert len(gbk_name) == len(b"placehol.txt")
    raw = buffer.getvalue().replace(b"placehol.txt", gbk_name)
    doc = parse_document(raw, "cn.zip", limits)
    assert [b.text for b in doc.blocks] == ["制度说明.txt", "内容"]


def test_ratio_bomb_is_refused(limits: ParseLimits) -> None:
    bomb = zip_bytes({"zeros.txt": b"0" * (64 * 1024 * 1024)})
    assert len(bomb) < 200_000
    with pytest.raises(ArchiveRefused, match=r"zeros.txt.*over the limit of 100:1 \(max_archive_ratio\)"):
        parse_document(bomb, "bomb.zip", limits)


def test_total_size_is_bounded() -> None:
    data = zip_bytes({f"part{i}.txt": os.urandom(600_000).hex().encode() for i in range(3)})
    with pytest.raises(ArchiveRefused, match=r"3600000 bytes uncompressed, over the limit of 2000000"):
        parse_document(data, "big.zip", ParseLimits(max_archive_bytes=2_000_000))


def test_too_many_members() -> None:
    data = zip_bytes({f"n{i}.txt": f"note {i}".encode() for i in range(30)})
    with pytest.raises(ArchiveRefused, match=r"30 members, over the limit of 20 \(max_archive_members\)"):
        parse_document(data, "many.zip", ParseLimits(max_archive_members=20))


def test_nested_archives_share_the_member_budget() -> None:
    inner = zip_bytes({f"n{i}.txt": f"note {i}".encode() for i in range(15)})
    outer = zip_bytes({"a.zip": inner, "b.zip": inner})  # 2 + 30 members in all, each archive under 20 alone
    with pytest.raises(ArchiveRefused, match=r"more than 20 members counting nested archives"):
        parse_document(outer, "nested.zip", ParseLimits(max_archive_members=20))


def test_nesting_depth_is_limited(limits: ParseLimits) -> None:
    data = zip_bytes({"deep.txt": "最深处的文件".encode()})
    for _ in range(3):
        data = zip_bytes({"inner.zip": data})
    with pytest.raises(ArchiveRefused, match=r"nested 4 deep, over the limit of 3 \(max_archive_depth\)"):
        parse_document(data, "russian-doll.zip", limits)
    shallow = zip_bytes({"inner.zip": zip_bytes({"deep.txt": "最深处的文件".encode()})})
    doc = parse_document(shallow, "doll.zip", limits)
    assert [(b.kind, b.level, b.text) for b in doc.blocks] == [
        ("heading", 1, "inner.zip"),
        ("heading", 2, "deep.txt"),
        ("paragraph", 0, "最深处的文件"),
    ]


@pytest.mark.parametrize("member", ["../evil.txt", "docs/../../evil.txt", "/etc/evil.txt", "C:\\evil.txt", "..\\evil"])
def test_unsafe_member_names_refuse_the_archive(
    member: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limits: ParseLimits
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    data = zip_bytes({"ok.txt": b"fine", member: b"should never be written anywhere"})
    with pytest.raises(ArchiveRefused, match="absolute or leaves the archive"):
        parse_document(data, "evil.zip", limits)
    # Nothing is ever extracted: neither the working folder nor its parent gained a file.
    assert list(work.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]


def test_corrupt_and_empty_archives(limits: ParseLimits) -> None:
    data = zip_bytes({"a.txt": b"hello world " * 100})
    with pytest.raises(DocumentError, match="cut.zip"):
        parse_document(data[: len(data) // 2], "cut.zip", limits)
    with pytest.raises(DocumentError, match="no member of the archive could be read"):
        parse_document(zip_bytes({"only.exe": b"MZ\x00\x00" * 10}), "exe.zip", limits)
