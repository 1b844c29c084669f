"""The sample knowledge base shipped with kbagent: the handbook of Qinglan Tech (青岚科技), a fictional company.

Six documents in Chinese and English, in .txt (one saved in GB18030), .md and .html (one in GBK), so that a
fresh install shows real answers and every text parser is exercised. Several questions need two documents
(a travel claim's deadline is in the expense policy; leave before the Spring Festival is in the holiday notice).
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def handbook_dir() -> Path:
    """The folder holding the sample handbook's files (package data, read-only: do not write into it).

    Raises FileNotFoundError when the package is installed in a form that has no real folder (a zip import).
    """
    folder = Path(str(files("kbagent.sample") / "handbook"))
    if not folder.is_dir():
        raise FileNotFoundError(f"the sample handbook is not a folder on disk here: {folder}")
    return folder
