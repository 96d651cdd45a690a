"""mcpwatch/ARCHITECTURE.md names files a reader will open: each must exist, so a move or rename that leaves the
map behind fails here rather than misleading the next reader."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "mcpwatch" / "ARCHITECTURE.md"
CITED_PATH = re.compile(r"^[\w*./-]+\.(?:py|md|toml)$|^[\w/-]+/$")
NOT_PATHS = {"mcpwatch.toml"}  # the user's settings file, named by the map, not a file of the repository


def cited_paths(text: str) -> set[str]:
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # the diagram
    return {token for token in re.findall(r"`([^`\s]+)`", text) if CITED_PATH.match(token)} - NOT_PATHS


def resolves(path: str) -> bool:
    return any(any(base.glob(path.rstrip("/"))) for base in (REPO, REPO / "mcpwatch"))


def test_every_cited_path_exists() -> None:
    paths = cited_paths(DOC.read_text(encoding="utf-8"))
    assert len(paths) > 50  # the map cites its files; an empty set would prove nothing
    missing = sorted(path for path in paths if not resolves(path))
    assert missing == [], f"ARCHITECTURE.md cites paths that do not exist: {missing}"


def test_a_missing_path_is_caught() -> None:
    assert cited_paths("see `wrapper/core/pump.py` and `wrapper/gone.py`") == {
        "wrapper/core/pump.py",
        "wrapper/gone.py",
    }
    assert resolves("wrapper/core/pump.py")
    assert not resolves("wrapper/gone.py")
