"""Fixtures for the parser tests: the CJK font the generated documents are written with."""

from __future__ import annotations

from pathlib import Path

import pytest
from parser_fixtures import find_cjk_font

from kbagent.knowledge.parsers.base import ParseLimits


@pytest.fixture(scope="session")
def cjk_font() -> Path:
    font = find_cjk_font()
    if font is None:
        pytest.skip(
            "no CJK font under /usr/share/fonts: install Debian's fonts-noto-cjk (scripts/ci/install-system.sh)"
        )
    return font


@pytest.fixture(scope="session")
def cjk_serif_font() -> Path:
    font = find_cjk_font(serif=True)
    if font is None:
        pytest.skip(
            "no CJK font under /usr/share/fonts: install Debian's fonts-noto-cjk (scripts/ci/install-system.sh)"
        )
    return font


@pytest.fixture
def limits() -> ParseLimits:
    return ParseLimits()
