"""Issue 36 on real Docker: `clawswe health` over a task repo of ours (tests/data/health-tasks: two healthy
instances, one flaky on purpose, one whose gold patch always fails) finds both and calls the others healthy; it
resumes without running anything again; runs given `--health` mark the unhealthy instances in metadata.json,
results.csv, JUnit, the terminal and the HTML report, with Pass@1 both ways, and say when a PASS_TO_PASS test that
passed at the base commit in every run of the check fails; `clawswe compare --exclude-unhealthy` leaves them out.

Everything is real (images built from the task repo, the oracle and nop harnesses, swebench's grading); the flaky
instance's tests toss coins (os.urandom in every fresh container), so the figures change from run to run: what is
asserted holds unless all three coin tests come out the same in all three gold runs and in all three nop runs
(probability 1/4096)."""
import csv
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parent.parent
TASKS = ROOT / "tests" / "data" / "health-tasks"
BREAKS_MEAN = f"{ROOT}/tests/health_harnesses.py:GoldButBreaksMeanHarness"
HEALTHY, FLAKY, BROKEN = ("clawswe__tally-py-1", "clawswe__tally-py-2"), "clawswe__tally-py-3", "clawswe__tally-py-4"
COINS = {f"tests/test_sample.py::test_pick_keeps_the_first[{n}]" for n in (1, 2, 3)}


def run(args: list[str], cwd: Path, env: dict, timeout: int = 3000) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, env={**os.environ, **env}, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def tally_images(docker_client):
    from pytest_clawswe.swe.instance.images import build_images, load_instances

    return build_images(load_instances(TASKS), docker_client, progress=lambda line: None)


@pytest.fixture(scope="module")
def checked(tally_images, tmp_path_factory):
    """`clawswe health --repeat 3` over the four instances: (the health file, its folder, the command's answer)."""
    where = tmp_path_factory.mktemp("health")
    env = {"CLAWSWE_IMAGE_INDEX": str(where / "image-index")}  # this test's image cache index, not the user's
    args = ["-m", "pytest_clawswe.cli", "health", "--dataset", str(TASKS), "--repeat", "3", "-n", "2",
            "--out", str(where / "health.json")]
    answer = run(args, where, env)
    assert answer.returncode == 0, answer.stdout[-3000:] + answer.stderr[-3000:]
    return where / "health.json", where, answer, args, env


def test_the_check_finds_the_flaky_and_the_broken_instance_and_calls_the_others_healthy(checked):
    path, _, answer, _, _ = checked
    health = json.loads(path.read_text())
    items = health["items"]
    figures = {iid: (e["verdict"], f"gold {e['gold']['resolved']}/{e['gold']['runs']}",
                     f"nop unresolved {e['nop']['unresolved']}/{e['nop']['runs']}") for iid, e in items.items()}
    print("\n".join(f"{iid}: {', '.join(f)}" for iid, f in figures.items()))  # the figures, in the test's output
    for iid in HEALTHY:
        assert figures[iid] == ("healthy", "gold 3/3", "nop unresolved 3/3"), items[iid]
        assert items[iid]["gold"]["changed"] == items[iid]["nop"]["changed"] == []
    flaky = items[FLAKY]
    assert flaky["verdict"] == "flaky" and flaky["nop"]["unresolved"] == 3, flaky
    changed = set(flaky["gold"]["changed"]) | set(flaky["nop"]["changed"])
    assert changed and changed <= COINS, flaky  # only the coin tests flip
    broken = items[BROKEN]
    assert figures[BROKEN] == ("broken", "gold 0/3", "nop unresolved 3/3"), broken
    assert broken["gold"]["failed"] == ["tests/test_stats.py::test_median_even_count"]
    assert all(e["gold"]["eval_s_max"] and e["eval_limit_s"] == 1800.0 for e in items.values())
    assert health["summary"] == {"instances": 4, "healthy": 2, "flaky": 1, "broken": 1, "too_slow": 0, "unknown": 0}
    lines = answer.stdout.splitlines()
    assert lines[-1].startswith(f"health: 4 instances of {TASKS}, 2 healthy, 1 flaky, 1 broken; 2 unhealthy")
    table = {line.split()[0]: line.split()[1] for line in lines if line.split() and line.split()[0] in items}
    assert table == {iid: e["verdict"] for iid, e in items.items()}
    assert sorted(p.name for p in (path.parent / "health-runs").iterdir() if p.is_dir()) == \
        ["nop.r1", "nop.r2", "nop.r3", "oracle.r1", "oracle.r2", "oracle.r3"]


def test_the_same_command_again_runs_nothing_and_writes_the_same_verdicts(checked):
    path, where, _, args, env = checked
    before = json.loads(path.read_text())["items"]
    again = run(args, where, env, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "[health] chunk" not in again.stdout  # every run of every chunk ended: nothing starts
    assert json.loads(path.read_text())["items"] == before


@pytest.fixture(scope="module")
def marked(checked):
    """Two runs given --health: the oracle, and a harness that applies the gold patch and breaks mean()."""
    path, where, _, _, env = checked
    runs = {}
    for name, harness in (("oracle", "oracle"), ("breaks-mean", BREAKS_MEAN)):
        run_dir = where / name
        answer = run(["-m", "pytest", "-p", "no:cacheprovider", "--harness", harness, "--dataset", str(TASKS),
                      "--health", str(path), "-n", "2", "--run-dir", str(run_dir),
                      "--junitxml", str(run_dir / "junit.xml")], where, env, timeout=1500)
        assert answer.returncode == 1, answer.stdout[-3000:] + answer.stderr[-3000:]  # some items fail
        runs[name] = (run_dir, answer)
    return path, runs


def meta(run_dir: Path, iid: str) -> dict:
    return json.loads((run_dir / "instances" / iid / "metadata.json").read_text())


def test_a_run_with_health_marks_the_unhealthy_instances_everywhere(marked):
    path, runs = marked
    run_dir, answer = runs["oracle"]
    verdicts = {iid: meta(run_dir, iid)["health"] for iid in (*HEALTHY, FLAKY, BROKEN)}
    assert verdicts == {HEALTHY[0]: "healthy", HEALTHY[1]: "healthy", FLAKY: "flaky", BROKEN: "broken"}
    assert json.loads((run_dir / "run.json").read_text())["health"].startswith(f"{path} (sha256 ")
    rows = {r["instance_id"]: r for r in csv.DictReader((run_dir / "results.csv").open())}
    assert {iid: r["health"] for iid, r in rows.items()} == verdicts
    summary = json.loads((run_dir / "summary.json").read_text())
    flaky_won = int(summary["resolved"]) - 2  # the flaky instance resolves when its three coins fall right
    assert summary["health"]["unhealthy"] == {FLAKY: "flaky", BROKEN: "broken"}
    assert (summary["health"]["resolved_healthy"], summary["health"]["healthy_instances"]) == (2, 2)
    out = answer.stdout
    assert (f"2 of 4 instances unhealthy (flaky 1, broken 1) · Pass@1 all {50 + 25 * flaky_won:.1f}% "
            f"({2 + flaky_won}/4) · healthy only 100.0% (2/2)") in out, out[-3000:]
    assert f"on unhealthy instances: {FLAKY} (flaky, " in out and f"{BROKEN} (broken, unresolved)" in out
    assert "instance broken in the health check (gold resolved 0/3, tests/test_stats.py::test_median_even_count " \
        "failing in every run)" in out  # the failing item's own line says it
    root = ET.parse(run_dir / "junit.xml").getroot()
    cases = {c.get("name"): {p.get("name"): p.get("value") for p in c.iter("property")} for c in root.iter("testcase")}
    assert {iid: props["clawswe.health"] for iid, props in cases.items()} == verdicts
    suite = {p.get("name"): p.get("value") for p in next(root.iter("testsuite")).find("properties")}
    assert (suite["clawswe.pass_at_1_healthy"], suite["clawswe.unhealthy_instances"]) == ("1", "2")


def test_a_pass_to_pass_test_that_passed_at_the_base_commit_and_fails_here_is_named(marked):
    _, runs = marked
    run_dir, answer = runs["breaks-mean"]
    for iid in HEALTHY:
        found = meta(run_dir, iid)["p2p_vs_base"]
        assert found["passed_at_base"] == ["tests/test_stats.py::test_mean"] and found["base_runs"] == 3, found
    assert "1 PASS_TO_PASS test(s) failing here passed at the base commit in all 3 health runs (e.g. " \
        "tests/test_stats.py::test_mean)" in answer.stdout
    rows = {r["instance_id"]: r for r in csv.DictReader((run_dir / "results.csv").open())}
    assert rows[HEALTHY[0]]["p2p_passed_at_base"] == "1"
    assert "PASS_TO_PASS tests that passed at the base commit in the health check fail in: " in answer.stdout


def test_the_report_and_compare_show_pass_at_1_both_ways(marked, tmp_path):
    path, runs = marked
    (a, _), (b, _) = runs["oracle"], runs["breaks-mean"]
    page = tmp_path / "report"
    made = run(["-m", "pytest_clawswe.cli", "report", str(a), str(b), "--out", str(page)], tmp_path, {}, 600)
    assert made.returncode == 0, made.stderr
    html = (page / "swe" / "index.html").read_text() if (page / "swe").is_dir() else (page / "index.html").read_text()
    assert "Pass@1 healthy (%)" in html and "<th>Health</th>" in html
    assert 'class="text health broken"' in html and "passed at the base commit in all 3 health runs" in html
    cmp = run(["-m", "pytest_clawswe.cli", "compare", str(a), str(b), "--exclude-unhealthy", str(path),
               "--json", str(tmp_path / "cmp.json")], tmp_path, {}, 600)
    assert cmp.returncode in (0, 1), cmp.stdout + cmp.stderr
    result = json.loads((tmp_path / "cmp.json").read_text())
    assert result["n_paired"] == 2 and result["health"]["excluded"] == {FLAKY: "flaky", BROKEN: "broken"}
    assert "left out 2 unhealthy of 4 paired (flaky 1, broken 1)" in cmp.stdout
    assert "resolve rate both ways: all 4 paired A " in cmp.stdout and " · healthy only 2 A 100.0%, B 0.0%" in \
        cmp.stdout
