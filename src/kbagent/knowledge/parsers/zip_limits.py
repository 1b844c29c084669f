"""Bounds on ZIP containers, checked from the central directory before anything is decompressed.

DOCX, XLSX and PPTX are ZIP files too, so a bomb can hide in an Office document as well as in a .zip; every
parser that opens a ZIP calls ``check_container`` first. Declared sizes can lie, so ``read_member`` also counts
the bytes it actually inflates and stops at the limit.
"""

from __future__ import annotations

import io
import zipfile
import zlib

from kbagent.errors import DocumentError
from kbagent.knowledge.parsers.base import ParseLimits

_CHUNK = 1 << 20


def open_zip(data: bytes, name: str) -> zipfile.ZipFile:
    """Open ZIP bytes in memory; a clear DocumentError when they are not a readable ZIP."""
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except Exception as exc:  # BadZipFile, but a damaged directory also raises OSError, EOFError, RuntimeError...
        raise DocumentError(f"{name}: not a readable ZIP container ({exc})") from exc


def check_container(archive: zipfile.ZipFile, name: str, limits: ParseLimits) -> None:
    """Refuse an archive whose members, declared total size, or compression ratio are over the limits."""
    infos = archive.infolist()
    files = [i for i in infos if not i.is_dir()]
    if len(files) > limits.max_archive_members:
        raise DocumentError(
            f"{name}: {len(files)} members, over the limit of {limits.max_archive_members} (max_archive_members)"
        )
    total = sum(i.file_size for i in files)
    if total > limits.max_archive_bytes:
        raise DocumentError(
            f"{name}: {total} bytes uncompressed, over the limit of {limits.max_archive_bytes} (max_archive_bytes)"
        )
    for info in files:
        check_ratio(info, name, limits)


def check_ratio(info: zipfile.ZipInfo, name: str, limits: ParseLimits) -> None:
    # Tiny members compress oddly (a 1 KB run of spaces is legitimately 100:1); only judge members worth a bomb.
    if info.file_size < 1 << 20:
        return
    ratio = info.file_size / max(info.compress_size, 1)
    if ratio > limits.max_archive_ratio:
        raise DocumentError(
            f"{name}: member {info.filename!r} expands {ratio:.0f}:1, over the limit of "
            f"{limits.max_archive_ratio:g}:1 (max_archive_ratio)"
        )


def read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, name: str, budget: int) -> bytes:
    """Inflate one member, never more than ``budget`` bytes (nor more than it declared), in memory.

    Raises DocumentError when the member is encrypted, corrupt, or inflates past the budget or its declared size.
    """
    if info.flag_bits & 0x1:
        raise DocumentError(f"{name}: member {info.filename!r} is encrypted")
    cap = min(budget, info.file_size)
    parts: list[bytes] = []
    size = 0
    try:
        with archive.open(info) as stream:
            while True:
                chunk = stream.read(min(_CHUNK, cap - size + 1))
                if not chunk:
                    break
                size += len(chunk)
                if size > cap:
                    raise DocumentError(
                        f"{name}: member {info.filename!r} inflates past {cap} bytes "
                        f"(declared {info.file_size}; max_archive_bytes)"
                    )
                parts.append(chunk)
    # RuntimeError: zipfile's error for a compression method it does not implement.
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError, RuntimeError) as exc:
        raise DocumentError(f"{name}: member {info.filename!r} is corrupt ({exc})") from exc
    return b"".join(parts)
