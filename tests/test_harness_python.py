"""The Python-based harness adapters (hermes, nanobot, mini-swe-agent, generic) end to end, and zeroclaw's
missing-bundle error.

Each harness runs for real from its bundle inside two demo instance containers of different language
groups (the bullseye-based one among them, the oldest glibc a bundle must run on), driven by the scripted
model through the gateway: `scripted/gold` must resolve both, `scripted/noop` neither. A fake upstream key
is set in the run's environment and must appear nowhere in the run directory.
"""
import json
import re
import sys
import types
from pathlib import Path

import pytest

from pytest_clawswe.gateway.record.ledger import read_records, usage_of
from pytest_clawswe.harness.adapter import HarnessError
from pytest_clawswe.harness.adapters.hermes import HermesHarness

sys.path.insert(0, str(Path(__file__).parent))  # loaded by path too (--harness FILE:Class)
from fake_harnesses import ListsProcessesOnBackup  # noqa: E402
from run_containers import left_containers  # noqa: E402

FAKE_KEY = "sk-or-REAL-KEY-MUST-NOT-LEAK"
USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
PYTHON_HARNESSES = ("hermes", "nanobot", "mini-swe-agent", "generic")
# the files each harness's session backup must hold (globs under <instance>/session)
SESSION_FILES = {
    "hermes": ["hermes/state.db", "hermes/usage.json", "hermes/logs/agent.log"],
    "nanobot": ["nanobot/sessions/*/*.jsonl", "nanobot/config.json"],
    "mini-swe-agent": ["mini/trajectory.json"],
    "generic": ["generic/temp/model_responses_*.txt", "generic/mykey.py"],
}
NANOBOT_TEMPLATES = ("AGENTS.md", "SOUL.md", "USER.md", "HEARTBEAT.md", "memory", "prompts", ".nanobot")


class ProcessListingHermes(ListsProcessesOnBackup, HermesHarness):
    """hermes, plus the processes left in the container when the session is backed up (after a budget cut)."""

    name = "hermes"


# ---------------------------------------------------------------------------------------- fast tests
def test_zeroclaw_without_its_bundle_is_one_clear_error(monkeypatch):
    """The adapter runs the bundle built from the user's executable (issue 16 §3: bundle and adapter agree)."""
    from pytest_clawswe.harness.adapters import zeroclaw

    monkeypatch.setattr("pytest_clawswe.harness.bundles.built_versions", lambda client, name: [])
    monkeypatch.setattr("pytest_clawswe.engine.docker.client.docker_client", lambda: None)
    with pytest.raises(HarnessError) as err:
        zeroclaw.ZeroClawHarness("scripted/gold", {})
    assert str(err.value) == ("zeroclaw is on no package registry; build its bundle from your executable first: "
                              "clawswe harness build zeroclaw --binary /path/to/zeroclaw")
    monkeypatch.setattr("pytest_clawswe.harness.bundles.built_versions", lambda client, name: ["sha256-a", "sha256-b"])
    with pytest.raises(HarnessError, match="several zeroclaw bundles"):
        zeroclaw.ZeroClawHarness("scripted/gold", {})
    monkeypatch.setattr("pytest_clawswe.harness.bundles.built_versions", lambda client, name: ["sha256-a"])
    harness = zeroclaw.ZeroClawHarness("scripted/gold", {})
    assert harness.home == "/opt/clawswe/zeroclaw-sha256-a" and harness.bin("zeroclaw").startswith(harness.home)
    assert zeroclaw.ZeroClawHarness("m", {"version": "sha256-b"}).version == "sha256-b"


def test_bundle_data_container_is_shared_across_runs_and_a_missing_bundle_names_the_build_command():
    import docker.errors

    from pytest_clawswe.harness.adapters._bundled import (
        BUNDLE_CACHE_LABEL,
        bundle_container_name,
        ensure_bundle_container,
    )

    class Fake:
        def __init__(self, have_image=True, exists=False, race=False):
            self.created, self.have_image, self.exists, self.race = [], have_image, exists, race
            self.containers = types.SimpleNamespace(get=self._get)
            self.images = types.SimpleNamespace(get=self._image)
            self.api = types.SimpleNamespace(create_container=self._create)

        def _get(self, name):
            if not (self.exists or self.created):
                raise docker.errors.NotFound("no")
            return name

        def _image(self, tag):
            if not self.have_image:
                raise docker.errors.ImageNotFound("no")
            return types.SimpleNamespace(id="sha256:0123456789abcdef")

        def _create(self, image, **kw):
            if self.race:  # another process got there first
                self.exists = True
                raise docker.errors.APIError("conflict", response=types.SimpleNamespace(status_code=409))
            self.created.append((image, kw))

    name = bundle_container_name("hermes", "0.19.0", "sha256:0123456789abcdef")
    assert name == "clawswe-bundle-hermes-0.19.0-0123456789ab"  # one per bundle image, whatever the run
    fake = Fake()
    assert ensure_bundle_container(fake, "hermes", "0.19.0") == name
    (image, kw), = fake.created
    assert image == "clawswe-bundle/hermes:0.19.0" and kw["labels"][BUNDLE_CACHE_LABEL] == "1"
    assert "clawswe.run" not in kw["labels"]  # a run's clean-up must not throw away the copy
    assert kw["volumes"] == ["/opt/clawswe/hermes-0.19.0"] and kw["name"] == name
    assert ensure_bundle_container(Fake(race=True), "hermes", "0.19.0") == name
    existing = Fake(exists=True)
    ensure_bundle_container(existing, "hermes", "0.19.0")
    assert existing.created == []
    with pytest.raises(HarnessError, match=r"not built; run: clawswe harness build nanobot"):
        ensure_bundle_container(Fake(have_image=False), "nanobot", "0.3.5")


# ---------------------------------------------------------------------------------------- real runs
@pytest.fixture(scope="module")
def two_groups(demo_instances, demo_images):
    """The bullseye-based demo instance and the Python one: two language groups, oldest glibc included."""
    bullseye = [i for i in demo_instances
                if "debian:bullseye" in (Path(i.task_dir) / "Dockerfile").read_text().split("\n", 1)[0]]
    first = bullseye[0] if bullseye else next(i for i in demo_instances if i.language != "Python")
    second = next(i for i in demo_instances if i.language == "Python" and i.language != first.language)
    return [first, second]


def _bundle(name):
    from pytest_clawswe.harness.bundles import build_bundle

    return build_bundle(name, progress=lambda line: None)  # reused when built


def _run(pytester, harness, model, instances, run_dir, *extra):
    ids = ",".join(i.instance_id for i in instances)
    return pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--run-dir", str(run_dir), "--harness", harness, "--model", model,
        "--dataset", "demo", "--instance-ids", ids, "-n", str(min(2, len(instances))), *extra, timeout=1200)


def _patch_files(diff: str) -> set[str]:
    return set(re.findall(r"^diff --git a/(\S+) b/", diff, re.M))


def _expected_harness_usage(harness: str, usage: dict) -> dict:
    """What the harness's own accounting must say, given the gateway's (each reports in its own terms)."""
    if harness == "generic":  # only "[Cache] input=<whole prompt> cached=<read>" lines
        prompt = sum(usage[f] for f in ("input_tokens", "cache_read_tokens", "cache_write_tokens"))
        return {"prompt_tokens": prompt, "cache_read_tokens": usage["cache_read_tokens"],
                "requests": usage["requests"]}
    expected = {f: usage[f] for f in USAGE_FIELDS} | {"requests": usage["requests"]}
    if harness == "nanobot":  # it also keeps its own whole-prompt number
        expected["prompt_tokens"] = sum(usage[f] for f in ("input_tokens", "cache_read_tokens", "cache_write_tokens"))
    return expected


def _check_run(run_dir, harness, instances, gold: bool):
    from pytest_clawswe.swe.dataset import load_row

    for inst in instances:
        d = run_dir / "instances" / inst.instance_id
        meta = json.loads((d / "metadata.json").read_text())
        assert meta["resolved"] is gold, (inst.instance_id, meta.get("error"), (d / "agent.log").read_text()[-2000:])
        assert meta["finish_reason"] == ("stop" if gold else "empty") and meta["attempts"] == 1
        # the gateway's record of every model call, summed, is what the run reports: exactly
        records = read_records(run_dir / "gateway", inst.instance_id)
        assert records and all(r["status"] == 200 for r in records)
        counted = usage_of(records)
        assert meta["usage"] == {"requests": counted.requests, **{f: getattr(counted, f) for f in USAGE_FIELDS}}
        assert meta["harness_usage"] == _expected_harness_usage(harness, meta["usage"])
        for pattern in SESSION_FILES[harness]:
            assert list((d / "session").glob(pattern)), f"{harness}: no session/{pattern}"
        patch = (d / "patch.diff").read_text()
        if gold:  # exactly the gold patch's files: no harness pollution
            assert _patch_files(patch) == _patch_files(load_row(inst)["patch"])
        else:
            assert patch == ""
        if harness == "nanobot":  # its templates went to the artifacts, not into the patch
            saved = {p.name for p in (d / "workspace_artifacts").iterdir()}
            assert {"AGENTS.md", "SOUL.md", "memory"} <= saved
            assert not any(t in (d / "patch.raw.diff").read_text() for t in NANOBOT_TEMPLATES)


def _assert_no_key(run_dir):
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert FAKE_KEY.encode() not in path.read_bytes(), f"the upstream key leaked into {path}"


@pytest.mark.docker
@pytest.mark.harness
@pytest.mark.parametrize("harness", PYTHON_HARNESSES)
def test_real_harness_resolves_with_scripted_gold_and_not_with_noop(pytester, monkeypatch, docker_client,
                                                                      two_groups, harness, tmp_path):
    _bundle(harness)
    monkeypatch.setenv("OPENROUTER_API_KEY", FAKE_KEY)  # the subprocess inherits it: it must never leak
    gold_dir, noop_dir = tmp_path / "gold", tmp_path / "noop"
    _run(pytester, harness, "scripted/gold", two_groups, gold_dir).assert_outcomes(passed=2)
    _check_run(gold_dir, harness, two_groups, gold=True)
    _run(pytester, harness, "scripted/noop", two_groups, noop_dir).assert_outcomes(failed=2)
    _check_run(noop_dir, harness, two_groups, gold=False)
    for run_dir in (gold_dir, noop_dir):
        _assert_no_key(run_dir)
        assert left_containers(docker_client, run_dir) == []


@pytest.mark.docker
@pytest.mark.harness
def test_a_timeout_kills_the_harness_inside_the_container(pytester, docker_client, two_groups, tmp_path):
    _bundle("hermes")
    python = [i for i in two_groups if i.language == "Python"]
    run_dir = tmp_path / "timeout"
    # hermes needs several seconds just to import: a 2 s budget always ends in the middle of it (grace=0: no
    # released 120 s wait past the budget, so the wrapper's kill is what ends it)
    spec = f"{Path(__file__).resolve()}:ProcessListingHermes"
    result = _run(pytester, spec, "scripted/gold", python, run_dir, "--budget", "2", "--harness-option", "grace=0")
    meta = json.loads((run_dir / "instances" / python[0].instance_id / "metadata.json").read_text())
    # on a quick machine hermes may have applied the fix before the kill: what it wrote is graded either way
    result.assert_outcomes(**({"passed": 1} if meta["resolved"] else {"failed": 1}))
    assert meta["finish_reason"] == "timeout" and meta["outcome"] in ("resolved", "unresolved")
    assert meta["timings"]["agent"] < 30
    # nothing of the bundle (hermes, its Python) runs on in the container after the cut
    processes = (run_dir / "instances" / python[0].instance_id / "session" / "processes.txt").read_text()
    assert processes.strip() and "/opt/clawswe/" not in processes and "hermes" not in processes, processes
