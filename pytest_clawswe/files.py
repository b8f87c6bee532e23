"""Files every benchmark writes: atomic writes (a crash leaves the old file or the new, never half of one), run.json,
safe file names and the torn-line check of append-only JSONL files."""
from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: Path, text: str, private: bool = False) -> None:
    """Write via a temporary file and rename, so a crash never leaves half a file.

    The file gets the usual mode (0644 under the common umask), like any file pytest writes; `private`:
    0600, only for files that hold a secret (mkstemp's 0600 would hide every run file from other users)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(fd, 0o600 if private else 0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_run_info(run_dir: str | Path) -> dict:
    path = Path(run_dir) / "run.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def safe_name(text: str, fill: str = "_") -> str:
    """`text` as one file name: each character outside [A-Za-z0-9._-] becomes `fill`; never empty."""
    return re.sub(r"[^A-Za-z0-9._-]", fill, text) or fill


def ends_with_newline(path: Path) -> bool:
    """Whether a non-empty file's last byte is a newline (else a process killed mid-line wrote its end)."""
    with open(path, "rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"
