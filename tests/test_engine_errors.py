"""No Docker engine, or no permission on its socket: one sentence before anything runs, nothing lost."""
import json
import os
import shutil
import subprocess
import sys

import pytest

NO_ENGINE = "no Docker engine answers; start Docker (on a fresh Debian machine: scripts/docker-up.sh) and run again"
NO_PERMISSION = "no permission on the Docker socket; add your user to the docker group or run as root"


def run(tmp_path, docker_host, *cmd, prefix=()):
    env = {**os.environ, "DOCKER_HOST": docker_host}
    return subprocess.run([*prefix, *cmd], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def earlier_run(tmp_path):
    """A run dir with one finished instance, which a failed resume must leave as it is."""
    run_dir = tmp_path / "run"
    meta = run_dir / "instances" / "clawswe__tinyjson-py-12" / "metadata.json"
    meta.parent.mkdir(parents=True)
    meta.write_text(json.dumps({"instance_id": "clawswe__tinyjson-py-12", "outcome": "resolved"}))
    (run_dir / "run.json").write_text(json.dumps({"run_id": "earlier"}))
    return run_dir, {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}


def check_refused(tmp_path, docker_host, sentence, prefix=()):
    run_dir, before = earlier_run(tmp_path)
    for harness in ("oracle", "claude-code"):  # one calls no model, the other starts the gateway first
        r = run(tmp_path, docker_host, sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--dataset", "demo",
                "--harness", harness, "--model", "scripted/gold", "--resume", str(run_dir), prefix=prefix)
        assert r.returncode == pytest.ExitCode.USAGE_ERROR, r.stdout + r.stderr
        assert f"ERROR: {sentence}" in r.stderr.splitlines()
        assert "Traceback" not in r.stderr + r.stdout
    assert {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()} == before
    r = run(tmp_path, docker_host, sys.executable, "-m", "pytest_clawswe.cli", "clean", prefix=prefix)
    assert r.returncode == 2 and r.stderr.strip().endswith(sentence), r.stderr


def test_no_engine_is_one_sentence_and_loses_nothing(tmp_path):
    check_refused(tmp_path, f"unix://{tmp_path}/no-such-docker.sock", NO_ENGINE)


@pytest.mark.docker
def test_no_permission_on_the_socket_is_one_sentence_and_loses_nothing(docker_client, tmp_path):
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("dropping the permission to reach the socket needs root and setpriv (CI runs as root)")
    # the real socket behind a folder this process may not search, the process stripped of the root
    # capabilities that would bypass that: the kernel refuses the connection as it would to any user
    locked = tmp_path / "locked"
    locked.mkdir()
    real = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock").removeprefix("unix://")
    (locked / "docker.sock").symlink_to(real)
    locked.chmod(0)
    try:
        check_refused(tmp_path, f"unix://{locked}/docker.sock", NO_PERMISSION,
                      prefix=("setpriv", "--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search"))
    finally:
        locked.chmod(0o755)
