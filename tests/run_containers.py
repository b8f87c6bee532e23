"""What a run left behind on a Docker engine (test helper): every container with the run's label."""
import json
from pathlib import Path

from pytest_clawswe.labels import LABEL_RUN


def left_containers(docker_client, run_dir: Path) -> list:
    """The containers of the run in `run_dir` still on the engine (its id from run.json): none after a run."""
    run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
    return docker_client.containers.list(all=True, filters={"label": f"{LABEL_RUN}={run_id}"})
