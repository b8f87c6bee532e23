"""What the run-level tests check of a refused run and of a folder that must stay as it was."""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

USAGE = pytest.ExitCode.USAGE_ERROR


def one_sentence(result, *words):
    """The whole complaint is one 'ERROR: ...' line naming `words`; no traceback."""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == USAGE, result.stdout + result.stderr
    assert len(lines) == 1 and lines[0].startswith("ERROR: "), result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    assert "Traceback" not in result.stdout + result.stderr
    return lines[0]


def digest(folder: Path) -> str:
    """Every byte, name and mode under `folder`."""
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        h.update(f"{path.relative_to(folder)}:{path.stat().st_mode:o}\n".encode())
        if path.is_file():
            h.update(path.read_bytes())
    return h.hexdigest()
