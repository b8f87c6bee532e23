"""Issue 36, instance health, without Docker: the health file and its one-sentence errors, the verdict rules, the
health check read back from run folders (and what it runs again), the marks a run's results get, the PASS_TO_PASS
check against the base commit, Pass@1 both ways and `clawswe compare --exclude-unhealthy`.
The check and runs on real Docker: tests/test_health_docker.py."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_clawswe import cli
from pytest_clawswe.report.health import HealthFileError, both_ways, load_health
from pytest_clawswe.run.item.result import ERROR
from pytest_clawswe.swe import grid
from pytest_clawswe.swe.health.cli import collect, columns, reopen, summary_line, table_lines
from pytest_clawswe.swe.health.marks import mark, note, p2p_vs_base
from pytest_clawswe.swe.health.runs import graded_tests_digest, instance_entry, verdict
from pytest_clawswe.swe.results.run_dir import RESOLVED, UNRESOLVED, InstanceResult, instance_dir
from pytest_clawswe.swe.results.summary import junit_properties, summarize, terminal_lines

P2P = ["t::a", "t::b", "t::coin"]
F2P = ["t::fix"]
ROW = {"instance_id": "x__y-1", "FAIL_TO_PASS": F2P, "PASS_TO_PASS": P2P}


def report(iid: str, passed: list[str], failed: list[str], resolved: bool) -> dict:
    status = {kind: {"success": [t for t in tests if t in passed], "failure": [t for t in tests if t in failed]}
              for kind, tests in (("FAIL_TO_PASS", F2P), ("PASS_TO_PASS", P2P))}
    return {iid: {"resolved": resolved, "patch_successfully_applied": True, "tests_status": status}}


def write_run(run_dir: Path, iid: str, outcome: str, passed=(), failed=(), eval_s=3.0, error="", limit=1800.0):
    """One ended item of a health-check run: metadata.json and swebench's eval/report.json."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "run.json").write_text(json.dumps({"benchmark": "swe", "eval_timeout_s": limit}))
    folder = instance_dir(run_dir, iid)
    (folder / "eval").mkdir(parents=True, exist_ok=True)
    result = InstanceResult(iid, outcome=outcome, resolved=None if outcome == ERROR else outcome == RESOLVED,
                            error=error, timings={"score": eval_s})
    (folder / "metadata.json").write_text(json.dumps(result.to_json()))
    if passed or failed:
        (folder / "eval" / "report.json").write_text(json.dumps(report(iid, list(passed), list(failed),
                                                                       outcome == RESOLVED)))


def figures(runs=3, resolved=3, errors=0, timed_out=0, eval_s=3.0, failed=(), changed=()):
    return {"runs": runs, "resolved": resolved, "errors": errors, "timed_out": timed_out, "eval_s_max": eval_s,
            "eval_s_mean": eval_s, "failed": list(failed), "changed": list(changed)}


# -- the health file ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("content, words", [
    (None, "no such file"),
    ("{oops", "is not JSON"),
    ('{"items": {}}', "is not a health file"),
    ('{"kind": "clawswe-health", "format": 9, "items": {}}', "has format 9"),
    ('{"kind": "clawswe-health", "format": 1, "items": {"a": {"verdict": "meh"}}}', "item a has no verdict"),
])
def test_a_bad_health_file_is_one_sentence(tmp_path, content, words):
    path = tmp_path / "health.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(HealthFileError) as err:
        load_health(path, "--exclude-unhealthy")
    text = str(err.value)
    assert words in text and text.startswith(f"--exclude-unhealthy {path}") and "\n" not in text


def test_pass_at_1_both_ways_leaves_out_only_the_unhealthy():
    ways = both_ways({"a": True, "b": False, "c": True, "d": False},
                     {"a": "healthy", "b": "broken", "c": "flaky", "d": ""})  # d: not in the file, kept
    assert (ways.passed, ways.items, ways.passed_healthy, ways.healthy) == (2, 4, 1, 2)
    assert ways.left_out == {"b": "broken", "c": "flaky"} and ways.rate_healthy == 0.5


# -- the verdict rules ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("gold, nop, expected, words", [
    (figures(), figures(resolved=0), "healthy", []),
    (figures(resolved=1, changed=["t::coin"]), figures(resolved=0, changed=["t::coin"]), "flaky",
     ["1 test(s) changed between repeats (1 in the gold runs, 1 in the nop runs): t::coin", "gold resolved 1/3"]),
    (figures(resolved=0, changed=["t::coin"]), figures(resolved=0), "flaky", ["(1 in the gold runs, 0 in the nop"]),
    (figures(resolved=0, failed=["t::fix"]), figures(resolved=0), "broken",
     ["gold resolved 0/3, t::fix failing in every run"]),
    (figures(), figures(resolved=3), "broken", ["nop resolved 3/3 (the tests pass without a fix)"]),
    (figures(timed_out=1, resolved=2), figures(resolved=0), "too_slow", ["gold evaluation timed out in 1/3 runs"]),
    (figures(eval_s=1000.0), figures(resolved=0), "too_slow", ["took up to 1000 s of its 1800 s limit"]),
    (figures(runs=0, errors=3, resolved=0), figures(resolved=0), "unknown", ["no gold run ended"]),
])
def test_verdicts(gold, nop, expected, words):
    name, reasons = verdict(gold, nop, 1800.0)
    assert name == expected
    for word in words:
        assert any(word in r for r in reasons), reasons


def test_the_check_is_read_back_from_its_run_folders_and_a_chunk_with_an_error_runs_again(tmp_path, capsys):
    plan = grid.Plan("data", columns(2), [["x__y-1", "x__y-2"]], [], done={c.name: [0] for c in columns(2)})
    good, coin_failed = ["t::fix", "t::a", "t::b", "t::coin"], ["t::fix", "t::a", "t::b"]
    for k, coin in ((1, True), (2, False)):
        ok = good if coin else coin_failed
        write_run(tmp_path / f"oracle.r{k}", "x__y-1", RESOLVED, passed=good)
        write_run(tmp_path / f"oracle.r{k}", "x__y-2", RESOLVED if coin else UNRESOLVED, passed=ok,
                  failed=[] if coin else ["t::coin"])
        write_run(tmp_path / f"nop.r{k}", "x__y-1", UNRESOLVED, passed=P2P, failed=F2P)
        write_run(tmp_path / f"nop.r{k}", "x__y-2", UNRESOLVED, passed=P2P, failed=F2P, eval_s=4.0 + k)
    health = collect(plan, tmp_path)
    one, two = health["items"]["x__y-1"], health["items"]["x__y-2"]
    assert (one["verdict"], one["gold"]["resolved"], one["nop"]["unresolved"], one["nop"]["failed"]) == \
        ("healthy", 2, 2, ["t::fix"])
    assert one["tests_digest"] == graded_tests_digest(F2P + P2P) and one["eval_limit_s"] == 1800.0
    assert (two["verdict"], two["gold"]["resolved"], two["gold"]["changed"]) == ("flaky", 1, ["t::coin"])
    assert two["nop"]["eval_s_max"] == 6.0 and health["summary"]["flaky"] == 1 and health["repeat"] == 2
    lines = table_lines(health)
    assert lines[0].split()[:3] == ["instance", "verdict", "gold"]
    assert lines[2].split()[:6] == ["x__y-2", "flaky", "1/2", "2/2", "6.0", "1"]
    assert "2 instances of data, 1 healthy, 1 flaky; 1 unhealthy" in summary_line(health, Path("h.json"))
    reopen(plan, tmp_path)
    assert all(plan.done[c.name] == [0] for c in plan.columns)  # every item ended: nothing runs again
    write_run(tmp_path / "nop.r2", "x__y-2", ERROR, error="the engine went away")
    reopen(plan, tmp_path)
    assert plan.done["nop.r2"] == [] and plan.done["nop.r1"] == [0]
    assert collect(plan, tmp_path)["items"]["x__y-2"]["nop"]["errors"] == 1


def test_the_check_runs_the_oracle_and_the_nop_with_its_tests_and_keeps_images(tmp_path, capsys):
    out = tmp_path / "h.json"
    assert cli.main(["health", "--dataset", "demo", "--repeat", "2", "--out", str(out), "-n", "2", "--dry-run",
                     "--instance-ids", "clawswe__tinyjson-py-12"]) == 0
    commands = [line for line in capsys.readouterr().out.splitlines() if line.startswith("[health]")]
    assert [c.split(":")[0].split()[-1] for c in commands] == ["oracle.r1", "oracle.r2", "nop.r1", "nop.r2"]
    assert all("-n 2" in c and "--image-cache 50g" in c and f"{tmp_path}/h-runs/" in c for c in commands)
    assert all("--harness-option run_tests=true" in c for c in commands if "--harness nop" in c)
    assert not out.exists()  # a dry run writes nothing
    assert cli.main(["health", "--dataset", "demo", "--repeat", "0"]) == 2
    assert "--repeat 0: give 1 or more" in capsys.readouterr().err


# -- a run's marks ----------------------------------------------------------------------------------------------

def health_file(tmp_path, entries: dict) -> Path:
    path = tmp_path / "health.json"
    path.write_text(json.dumps({"kind": "clawswe-health", "format": 1, "dataset": "d", "items": entries}))
    return path


def test_failing_pass_to_pass_tests_are_sorted_by_what_they_did_at_the_base_commit():
    entry = instance_entry({"gold": [{"error": False, "resolved": True, "timed_out": False, "eval_s": 2.0,
                                      "tests": {t: "passed" for t in F2P + P2P}}] * 2,
                            "nop": [{"error": False, "resolved": False, "timed_out": False, "eval_s": 2.0,
                                     "tests": {"t::fix": "failed", "t::a": "passed", "t::b": "failed",
                                               "t::coin": status}} for status in ("passed", "failed")]}, 60.0)
    found = p2p_vs_base(ROW, report("x__y-1", ["t::fix"], P2P, False), entry)
    assert found == {"passed_at_base": ["t::a"], "flaky": ["t::coin"], "failing_at_base": ["t::b"], "base_runs": 2}
    assert p2p_vs_base(ROW, report("x__y-1", F2P + P2P, [], True), entry) == {}  # nothing failing, nothing said
    other = {**ROW, "PASS_TO_PASS": P2P + ["t::new"]}  # another revision of the row: not checked
    assert "not_checked" in p2p_vs_base(other, report("x__y-1", [], P2P, False), entry)
    result = InstanceResult("x__y-1", outcome=UNRESOLVED)
    result.health, result.health_reason = "flaky", "gold resolved 2/3"
    result.p2p_vs_base = found
    text = note(result)
    assert "instance flaky in the health check (gold resolved 2/3)" in text
    assert "1 PASS_TO_PASS test(s) failing here passed at the base commit in all 2 health runs (e.g. t::a)" in text


def test_a_run_s_totals_and_properties_carry_the_marks(tmp_path):
    path = health_file(tmp_path, {"a": {"verdict": "healthy", "reasons": []},
                                  "b": {"verdict": "broken", "reasons": ["gold resolved 0/3"]},
                                  "c": {"verdict": "flaky", "reasons": ["gold resolved 1/3"]}})
    health = load_health(path)
    results = []
    for iid, outcome in (("a", RESOLVED), ("b", UNRESOLVED), ("c", RESOLVED), ("d", UNRESOLVED)):
        r = InstanceResult(iid, outcome=outcome, resolved=outcome == RESOLVED, harness="oracle")
        mark(r, health)
        results.append(r)
    assert [r.health for r in results] == ["healthy", "broken", "flaky", ""]
    assert results[1].csv_row()["health"] == "broken" and results[3].csv_row()["p2p_passed_at_base"] == ""
    summary = summarize(results, {"health": health.label()})
    h = summary["health"]
    assert (h["pass_at_1_healthy"], h["healthy_instances"], h["unhealthy"]) == (0.5, 2, {"b": "broken", "c": "flaky"})
    lines = terminal_lines(summary)
    assert any("2 of 4 instances unhealthy (flaky 1, broken 1) · Pass@1 all 50.0% (2/4) · healthy only 50.0% "
               "(1/2) · 1 not in the file" in line for line in lines), lines
    assert "on unhealthy instances: b (broken, unresolved), c (flaky, resolved)" in lines
    props = dict(junit_properties(summary))
    assert (props["clawswe.pass_at_1_healthy"], props["clawswe.unhealthy_instances"]) == ("0.5", "2")
    assert summarize([InstanceResult("z", outcome=RESOLVED)], {})["health"] is None  # no --health: nothing said


# -- the run refuses a bad file before anything is written; another benchmark refuses the option ------------------

@pytest.mark.parametrize("args, words", [
    (["--dataset", "demo", "--health", "missing.json"], ["--health", "missing.json: no such file"]),
    (["--dataset", "demo", "--health", "bad.json"], ["is not a health file"]),
    (["--dataset", "demo", "--health", "other.json"], ["names none of the 8 selected instances (it checked dataset "
                                                       "other); give this dataset's health file"]),
    (["--benchmark", "wildclaw", "--harness", "claude-code", "--model", "scripted/gold", "--dataset", "demo",
      "--health", "bad.json"], ["--health is --benchmark swe's option"]),
])
def test_a_bad_health_option_is_refused_before_the_run_writes(tmp_path, args, words):
    (tmp_path / "bad.json").write_text("[]")
    (tmp_path / "other.json").write_text(json.dumps({"kind": "clawswe-health", "format": 1, "dataset": "other",
                                                     "items": {"o__x-1": {"verdict": "healthy"}}}))
    harness = [] if "--harness" in args else ["--harness", "oracle"]
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *harness, *args],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert r.returncode == pytest.ExitCode.USAGE_ERROR and len(lines) == 1, r.stdout + r.stderr
    assert all(word in lines[0] for word in words), lines[0]
    assert not (tmp_path / "reports").exists()


# -- compare --exclude-unhealthy ---------------------------------------------------------------------------------

def swe_run(path: Path, resolved: dict) -> Path:
    path.mkdir(parents=True)
    (path / "run.json").write_text(json.dumps({"benchmark": "swe", "harness": "h", "model": "m", "dataset": "d"}))
    for iid, ok in resolved.items():
        folder = instance_dir(path, iid)
        folder.mkdir(parents=True)
        r = InstanceResult(iid, outcome=RESOLVED if ok else UNRESOLVED, resolved=ok)
        (folder / "metadata.json").write_text(json.dumps(r.to_json()))
    return path


def test_compare_leaves_the_unhealthy_out_of_the_pairs_and_shows_both_ways(tmp_path, capsys):
    ids = [f"i{k}" for k in range(6)]
    a = swe_run(tmp_path / "a", {i: True for i in ids})
    b = swe_run(tmp_path / "b", {**{i: True for i in ids[:4]}, "i4": False, "i5": False})
    path = health_file(tmp_path, {"i4": {"verdict": "flaky", "reasons": []}, "i5": {"verdict": "too_slow",
                                                                                   "reasons": []},
                                  **{i: {"verdict": "healthy", "reasons": []} for i in ids[:3]}})
    out = tmp_path / "cmp.json"
    assert cli.main(["compare", str(a), str(b), "--exclude-unhealthy", str(path), "--json", str(out)]) == 0
    text = capsys.readouterr().out
    result = json.loads(out.read_text())
    assert result["n_paired"] == 4 and result["lost"] == [] and result["value_b"] == 1.0
    assert result["health"]["excluded"] == {"i4": "flaky", "i5": "too_slow"} and result["health"]["not_in_file"] == 1
    assert result["health"]["all_pairs"] == {"n": 6, "value_a": 1.0, "value_b": pytest.approx(4 / 6)}
    assert "left out 2 unhealthy of 6 paired (flaky 1, too slow 1)" in text and ": i4, i5" in text
    assert "resolve rate both ways: all 6 paired A 100.0%, B 66.7% · healthy only 4 A 100.0%, B 100.0%" in text
    assert cli.main(["compare", str(a), str(b), "--exclude-unhealthy", str(tmp_path / "nope.json")]) == 2
    assert "--exclude-unhealthy" in capsys.readouterr().err


def test_a_resume_must_give_the_run_s_own_health_file(tmp_path):
    """The marks are written into each instance's result: a resume with another file (or none) would mix two."""
    path = health_file(tmp_path, {"clawswe__tinyjson-py-12": {"verdict": "healthy", "reasons": []}})
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "run.json").write_text(json.dumps({"benchmark": "swe", "run_id": "r", "health": None}))
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--harness", "oracle", "--dataset",
                        "demo", "--resume", str(run_dir), "--health", str(path)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert r.returncode == pytest.ExitCode.USAGE_ERROR and len(lines) == 1, r.stdout + r.stderr
    assert lines[0].startswith(f"ERROR: health is '{path} (sha256 ") and "used None; resume with the run's own" \
        in lines[0], lines[0]
    assert json.loads((run_dir / "run.json").read_text()) == {"benchmark": "swe", "run_id": "r", "health": None}


def test_the_demo_set_s_shipped_file_covers_every_instance_and_its_tests():
    from pytest_clawswe.swe.dataset import load_instances, load_row
    from pytest_clawswe.swe.health.marks import SHIPPED

    health = load_health(SHIPPED["demo"])
    rows = [load_row(i) for i in load_instances("demo")]
    assert set(health.items) == {r["instance_id"] for r in rows} and health.dataset == "demo"
    assert health.data["repeat"] == 3 and health.unhealthy() == {}  # written by the check: every instance healthy
    for row in rows:  # the PASS_TO_PASS check applies to the shipped rows
        entry = health.items[row["instance_id"]]
        assert entry["tests_digest"] == graded_tests_digest(row["FAIL_TO_PASS"] + row["PASS_TO_PASS"]), row
        assert (entry["gold"]["resolved"], entry["nop"]["unresolved"]) == (3, 3)


def test_an_evaluation_swebench_stopped_at_its_limit_makes_the_instance_too_slow(tmp_path):
    plan = grid.Plan("data", columns(1), [["x__y-1"]], [])
    write_run(tmp_path / "oracle.r1", "x__y-1", UNRESOLVED, error="the tests timed out after 60.0 s", eval_s=61.0,
              limit=60.0)
    (instance_dir(tmp_path / "oracle.r1", "x__y-1") / "eval" / "run_instance.log").write_text(
        "Running tests...\nTest timed out after 60 seconds.\n")  # swebench's own words
    write_run(tmp_path / "nop.r1", "x__y-1", UNRESOLVED, passed=P2P, failed=F2P, eval_s=20.0, limit=60.0)
    entry = collect(plan, tmp_path)["items"]["x__y-1"]
    assert (entry["verdict"], entry["gold"]["timed_out"]) == ("too_slow", 1)
    assert entry["reasons"][0] == "the gold evaluation timed out in 1/1 runs (limit 60 s)"
    assert "gold resolved 0/1" in entry["reasons"]  # what else was found is kept
