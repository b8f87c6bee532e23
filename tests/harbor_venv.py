"""Harbor itself, to check our exports with: harbor 0.26.0 from PyPI in a Python 3.12 virtual environment (it needs
Python >= 3.12), built once into $CLAWSWE_CACHE (default ~/.cache/clawswe)/harbor-venv/ and reused by every later
run (CI builds it once). Several processes may ask at once: one builds under a lock, the others wait for it; a
build cut short is started over (the stamp file is written last).

    python tests/harbor_venv.py     # build it ahead (scripts/test.sh does, when a selected test needs it)
"""
from __future__ import annotations

import fcntl
import glob
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

HARBOR = "harbor==0.26.0"
PYTHON = (3, 12)


class NoPython(Exception):
    """No Python 3.12 on this machine: the checks that need Harbor are skipped, saying so."""


def cache_dir() -> Path:
    return Path(os.environ.get("CLAWSWE_CACHE", Path.home() / ".cache" / "clawswe")) / "harbor-venv"


def find_python() -> str:
    """A Python 3.12 interpreter: $CLAWSWE_HARBOR_PYTHON, python3.12 on PATH, pyenv's, or the usual places."""
    candidates = [os.environ.get("CLAWSWE_HARBOR_PYTHON", ""), shutil.which("python3.12") or "",
                  *sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.12*/bin/python3.12")), reverse=True),
                  "/usr/local/bin/python3.12", "/usr/bin/python3.12"]
    for exe in filter(None, candidates):
        try:
            found = subprocess.run([exe, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True,
                                   text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if found.returncode == 0 and tuple(map(int, found.stdout.split())) == PYTHON:
            return exe
    raise NoPython("no Python 3.12 on this machine (Harbor 0.26.0 needs Python >= 3.12): install one, or name it "
                   "in CLAWSWE_HARBOR_PYTHON")


def build_harbor(progress=print) -> Path:
    """The venv's python, with harbor installed; built on first use (a few minutes: about 200 MB from PyPI)."""
    venv = cache_dir() / f"{HARBOR.replace('==', '-')}-py{PYTHON[0]}.{PYTHON[1]}"
    python, stamp = venv / "bin" / "python", venv / ".installed"
    if stamp.is_file():
        return python
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f".{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building it: wait for it
        if stamp.is_file():
            return python
        base = find_python()
        started = time.monotonic()
        progress(f"[harbor] building {venv} ({HARBOR} on {base}); once, a few minutes")
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([base, "-m", "venv", str(venv)], check=True, capture_output=True, text=True)
        pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        built = subprocess.run([*pip, HARBOR], capture_output=True, text=True)
        if built.returncode != 0:
            raise RuntimeError(f"pip install {HARBOR} failed in {venv}: {built.stderr[-2000:]}")
        stamp.write_text(f"{HARBOR}\n")
        progress(f"[harbor] built in {time.monotonic() - started:.0f} s")
    return python


@pytest.fixture(scope="session")
def harbor_python() -> Path:
    """Harbor's interpreter for a test (import this fixture into the test module); skipped, saying why, only where
    the machine has no Python 3.12."""
    try:
        return build_harbor(progress=lambda line: print(line, file=sys.stderr))
    except NoPython as exc:
        pytest.skip(str(exc))


def harbor_command(python: Path) -> list[str]:
    """How to run the `harbor` command of that venv (its console script, through its own interpreter)."""
    return [str(python), str(python.parent / "harbor")]


if __name__ == "__main__":
    try:
        started = time.monotonic()
        print(f"[harbor] {build_harbor()} ready in {time.monotonic() - started:.1f} s")
    except NoPython as exc:
        print(f"[harbor] skipped: {exc}")
    sys.exit(0)
