"""ZIP archives, parsed member by member through the registry, entirely in memory: nothing is ever extracted.

Each member's blocks follow a level-1 heading naming the member (its own headings move one level down), so a
paragraph's title path says which file inside the archive it came from.

Limits, shared by nested archives through a context variable so a zip inside a zip cannot multiply them:
members in all (``max_archive_members``), uncompressed bytes in all (``max_archive_bytes``), the expansion ratio
of any member (``max_archive_ratio``), and nesting depth (``max_archive_depth``). Breaking one of these, or a member
name that is absolute or climbs out with ``..``, refuses the whole archive: such archives are hostile, not damaged.
A member that merely fails to parse (unsupported type, corrupt) is skipped and listed in ``meta["skipped"]``.
"""

from __future__ import annotations

import contextvars
import re
import zipfile
from dataclasses import dataclass, replace

from kbagent.errors import DocumentError
from kbagent.knowledge.parsers import parse_document, zip_limits
from kbagent.knowledge.parsers.base import Block, ParsedDocument, ParseLimits, Progress

# Finder/Explorer metadata that is never a document.
_JUNK = re.compile(r"(^|/)(__MACOSX/|\.DS_Store$|Thumbs\.db$|desktop\.ini$)", re.IGNORECASE)


class ArchiveRefused(DocumentError):
    """The archive breaks a safety limit or holds a hostile member name: no member of it is ingested."""


@dataclass
class _Budget:
    members_left: int
    bytes_left: int
    depth: int


_budget: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar("archive_budget", default=None)


def parse_zip(data: bytes, name: str, limits: ParseLimits, progress: Progress | None = None) -> ParsedDocument:
    """Parse every member of a ZIP archive with the parser its content calls for.

    Raises ArchiveRefused (a DocumentError) when a limit is broken or a member name is unsafe, and DocumentError
    when the archive is unreadable or no member yields text; per-member failures are reported in
    ``meta["skipped"]`` as ``{"member", "reason"}``.
    """
    outer = _budget.get()
    depth = outer.depth + 1 if outer else 1
    if depth > limits.max_archive_depth:
        raise ArchiveRefused(
            f"{name}: archives nested {depth} deep, over the limit of {limits.max_archive_depth} (max_archive_depth)"
        )
    archive = zip_limits.open_zip(data, name)
    try:
        zip_limits.check_container(archive, name, limits)
    except DocumentError as exc:
        raise ArchiveRefused(exc.message) from exc
    budget = _Budget(
        members_left=outer.members_left if outer else limits.max_archive_members,
        bytes_left=outer.bytes_left if outer else limits.max_archive_bytes,
        depth=depth,
    )
    members = [(info, _member_name(info)) for info in archive.infolist() if not info.is_dir()]
    for _, member in members:
        _check_name(name, member)
    token = _budget.set(budget)
    try:
        blocks, parsed, skipped = _parse_members(archive, members, name, limits, budget, progress)
    finally:
        _budget.reset(token)
        if outer is not None:  # what the nested archive used counts against the outer one
            outer.members_left, outer.bytes_left = budget.members_left, budget.bytes_left
    if not parsed:
        reasons = "; ".join(f"{s['member']}: {s['reason']}" for s in skipped[:5]) or "it has no files"
        raise DocumentError(f"{name}: no member of the archive could be read ({reasons})")
    return ParsedDocument(format="zip", blocks=blocks, meta={"members": parsed, "skipped": skipped})


def _parse_members(
    archive: zipfile.ZipFile,
    members: list[tuple[zipfile.ZipInfo, str]],
    name: str,
    limits: ParseLimits,
    budget: _Budget,
    progress: Progress | None,
) -> tuple[list[Block], list[str], list[dict[str, str]]]:
    blocks: list[Block] = []
    parsed: list[str] = []
    skipped: list[dict[str, str]] = []
    for done, (info, member) in enumerate(members, start=1):
        if _JUNK.search(member):
            continue
        budget.members_left -= 1
        if budget.members_left < 0:
            raise ArchiveRefused(
                f"{name}: more than {limits.max_archive_members} members counting nested archives (max_archive_members)"
            )
        if info.file_size > limits.max_bytes:
            reason = f"{info.file_size:,} bytes, over the limit of {limits.max_bytes:,} bytes per file (max_bytes)"
            skipped.append({"member": member, "reason": reason})
            continue
        if info.file_size > budget.bytes_left:
            raise ArchiveRefused(
                f"{name}: members expand past {limits.max_archive_bytes:,} bytes in all (max_archive_bytes)"
            )
        try:
            data = zip_limits.read_member(archive, info, name, budget.bytes_left)
        except DocumentError as exc:
            skipped.append({"member": member, "reason": exc.message})
            continue
        budget.bytes_left -= len(data)
        try:
            document = parse_document(data, f"{name}/{member}", limits)
        except ArchiveRefused:
            raise
        except DocumentError as exc:
            skipped.append({"member": member, "reason": exc.message})
            continue
        blocks.append(Block(member, kind="heading", level=1))
        blocks.extend(replace(b, level=b.level + 1) if b.kind == "heading" else b for b in document.blocks)
        parsed.append(member)
        if progress is not None:
            progress(done, len(members), f"{name}: {member}")
    return blocks, parsed, skipped


def _member_name(info: zipfile.ZipInfo) -> str:
    name = info.filename
    if not info.flag_bits & 0x800:
        # Without the UTF-8 flag zipfile decodes names as cp437; archives made on Chinese Windows use GBK,
        # and some tools write UTF-8 without setting the flag.
        raw = name.encode("cp437", errors="replace")
        for encoding in ("utf-8", "gbk"):
            try:
                return raw.decode(encoding)
            except UnicodeDecodeError:
                continue
    return name


def _check_name(archive_name: str, member: str) -> None:
    parts = re.split(r"[\\/]", member)
    if member.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", member) or ".." in parts or "\x00" in member:
        raise ArchiveRefused(
            f"{archive_name}: member name {member!r} is absolute or leaves the archive ('..'); archive refused"
        )
