"""A script of tests/ run in Debian's Chromium (the WildClawBench task image): the trajectory pages' and the Harbor
viewer's browser tests share it."""
from __future__ import annotations

import json
import shutil
from pathlib import Path


def run_in_chromium(docker_client, script: str, folder: Path, args: list[str], network: str, label: str,
                    timeout: int, log_chars: int = 3000) -> dict:
    """Copy tests/`script` into `folder` (made if missing), mounted at /<folder name>, and run it there with
    `args`; assert it exited 0 (its log's tail otherwise); return the seen.json it wrote into `folder`."""
    from pytest_clawswe.wildclaw.task.images import ensure_images

    image = ensure_images(docker_client, progress=lambda line: None)[0]
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(Path(__file__).with_name(script), folder)
    inside = f"/{folder.name}"
    container = docker_client.containers.run(image, ["python3", f"{inside}/{script}", *args],
                                             volumes={str(folder): {"bind": inside, "mode": "rw"}},
                                             network_mode=network, detach=True, labels={"clawswe.test": label})
    try:
        status = container.wait(timeout=timeout)
        logs = container.logs().decode(errors="replace")
    finally:
        container.remove(force=True)
    assert status["StatusCode"] == 0, logs[-log_chars:]
    return json.loads((folder / "seen.json").read_text())
