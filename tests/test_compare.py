"""`clawswe compare` on small run folders (fast): pairing, the verdict and its exit status, the reasons two
runs are not comparable, the JSON, and the paired score statistics for WildClawBench."""
import json
import math

import pytest

from pytest_clawswe import cli
from pytest_clawswe.report.compare import compare, load_run
from pytest_clawswe.report.score_stats import bootstrap_ci, compare_scores, sign_flip_p
from pytest_clawswe.report.stats import mcnemar_exact
from pytest_clawswe.run.item.result import ERROR
from pytest_clawswe.swe.results.run_dir import RESOLVED, UNRESOLVED, InstanceResult, instance_dir

SETTINGS = {"dataset": "demo", "dataset_revision": None, "budget_s": 3600.0, "eval_timeout_s": 1800.0,
            "mem_limit": "8g", "pids_limit": 300, "disk_limit": 21474836480, "network": "locked", "purge": True,
            "retries": 0, "gateway_shaping": "auto", "grade_provider_failures": False}


def swe_run(path, resolved: dict, model="scripted/gold", **settings):
    """A Claw-SWE-Bench run folder: run.json and one metadata.json per instance (True/False/None = error)."""
    path.mkdir(parents=True)
    (path / "run.json").write_text(json.dumps({"benchmark": "claw-swe-bench", "harness": "claude-code",
                                               "model": model, **SETTINGS, **settings}))
    for iid, ok in resolved.items():
        r = InstanceResult(iid, outcome=ERROR if ok is None else RESOLVED if ok else UNRESOLVED, resolved=ok)
        folder = instance_dir(path, iid)
        folder.mkdir(parents=True)
        (folder / "metadata.json").write_text(json.dumps(r.to_json()))
    return path


def wild_run(path, scores: dict, **settings):
    path.mkdir(parents=True)
    (path / "run.json").write_text(json.dumps({"benchmark": "wildclaw", "harness": "openclaw", "model": "m",
                                               "judge_model": "scripted", "grade_timeout_s": 120.0,
                                               **SETTINGS, **settings}))
    for task, score in scores.items():
        folder = path / "tasks" / task
        folder.mkdir(parents=True)
        outcome = "error" if score is None else "passed" if score >= 0.5 else "failed"
        (folder / "result.json").write_text(json.dumps({"task_id": task, "outcome": outcome,
                                                        "overall_score": score, "pass_score": 0.5}))
    return path


IDS = [f"i{k}" for k in range(8)]


def test_a_regression_on_enough_instances_exits_1_and_lists_what_flipped(tmp_path, capsys):
    a = swe_run(tmp_path / "a", {i: True for i in IDS})
    b = swe_run(tmp_path / "b", {**{i: False for i in IDS[:7]}, "i7": True}, model="scripted/noop")
    out = tmp_path / "cmp.json"
    assert cli.main(["compare", str(a), str(b), "--json", str(out)]) == 1
    text = capsys.readouterr().out
    result = json.loads(out.read_text())
    assert result["lost"] == IDS[:7] and result["gained"] == [] and result["n_paired"] == 8
    assert result["p_value"] == pytest.approx(mcnemar_exact(7, 0)) and result["p_value"] < 0.05
    assert result["diff_b_minus_a"] == pytest.approx(-7 / 8)
    low, high = result["ci"]
    assert low < -7 / 8 < high < 0  # the interval is for B - A and excludes 0
    assert "resolve rate: A 100.0%, B 12.5%; B - A -87.5 pp" in text and "exit 1" in text
    assert "lost in B (passed in A only, 7): i0, i1" in text


def test_too_few_flips_or_an_improvement_exit_0(tmp_path):
    a = swe_run(tmp_path / "a", {i: True for i in IDS})
    b = swe_run(tmp_path / "b", {**{i: True for i in IDS[:3]}, **{i: False for i in IDS[3:]}})  # 5 lost: p 0.0625
    assert compare(load_run(a), load_run(b))["exit_code"] == 0
    assert compare(load_run(a), load_run(b), alpha=0.1)["exit_code"] == 1  # the level is the user's
    assert compare(load_run(b), load_run(a))["exit_code"] == 0  # better is never a regression
    same = compare(load_run(a), load_run(a))
    assert same["exit_code"] == 0 and math.copysign(1, same["diff_b_minus_a"]) == 1  # +0.0, not -0.0


def test_errors_and_unshared_instances_are_left_out_of_the_pairs(tmp_path):
    a = swe_run(tmp_path / "a", {"i0": True, "i1": True, "i2": None, "only_a": True})
    b = swe_run(tmp_path / "b", {"i0": True, "i1": False, "i2": False, "only_b": False})
    result = compare(load_run(a), load_run(b))
    assert result["n_paired"] == 2 and result["lost"] == ["i1"]
    assert result["errors_a"] == ["i2"] and result["only_in_a"] == ["only_a"] and result["only_in_b"] == ["only_b"]


@pytest.mark.parametrize("change, words", [
    ({"dataset": "claw-swe-bench"}, "different datasets (dataset 'demo' vs 'claw-swe-bench')"),
    ({"dataset_revision": "abc123"}, "different datasets (dataset_revision None vs 'abc123')"),
    ({"budget_s": 1800.0, "network": "open"}, "protocol settings (budget_s 3600.0 vs 1800.0, network 'locked' vs "
                                              "'open')"),
    ({"purge": False}, "purge True vs False"),
])
def test_other_dataset_or_protocol_exits_2_with_one_sentence(tmp_path, capsys, change, words):
    a = swe_run(tmp_path / "a", {i: True for i in IDS})
    b = swe_run(tmp_path / "b", {i: False for i in IDS}, **change)
    out = tmp_path / "cmp.json"
    assert cli.main(["compare", str(a), str(b), "--json", str(out)]) == 2
    result = json.loads(out.read_text())
    assert not result["comparable"] and words in result["reason"] and result["reason"].count(". ") == 0
    assert f"not comparable: {result['reason']}" in capsys.readouterr().out


def test_other_benchmark_or_nothing_shared_exits_2(tmp_path):
    swe = swe_run(tmp_path / "swe", {"i0": True})
    wild = wild_run(tmp_path / "wild", {"t0": 1.0})
    result = compare(load_run(swe), load_run(wild))
    assert result["exit_code"] == 2
    # benchmark ids as run.json writes them since the benchmarks became packages ("claw-swe-bench" is read as swe)
    assert result["reason"] == ("A is a swe run and B a wildclaw run: runs of different benchmarks are "
                                "not comparable.")
    other = swe_run(tmp_path / "other", {"i9": True})
    assert "share no finished instance" in compare(load_run(swe), load_run(other))["reason"]
    judge = wild_run(tmp_path / "judge", {"t0": 1.0}, judge_model="openai/gpt-5.4")
    assert "judge_model 'scripted' vs 'openai/gpt-5.4'" in compare(load_run(wild), load_run(judge))["reason"]


def test_user_errors_are_one_sentence(tmp_path, capsys):
    a = swe_run(tmp_path / "a", {"i0": True})
    assert cli.main(["compare", str(a), str(tmp_path / "nope")]) == 2
    assert "holds no run (no run.json)" in capsys.readouterr().err
    assert cli.main(["compare", str(a), str(a), "--alpha", "1.5"]) == 2
    assert "--alpha 1.5: give a level between 0 and 1" in capsys.readouterr().err


def test_wildclaw_scores_paired(tmp_path, capsys):
    tasks = [f"t{k}" for k in range(10)]
    a = wild_run(tmp_path / "a", {t: 0.9 for t in tasks})
    b = wild_run(tmp_path / "b", {**{t: 0.3 for t in tasks[:9]}, "t9": None})  # an error: left out
    out = tmp_path / "cmp.json"
    assert cli.main(["compare", str(a), str(b), "--json", str(out)]) == 1
    result = json.loads(out.read_text())
    assert result["metric"] == "mean_score" and result["n_paired"] == 9 and result["errors_b"] == ["t9"]
    assert result["diff_b_minus_a"] == pytest.approx(-0.6) and result["ci"] == pytest.approx([-0.6, -0.6])
    assert result["p_value"] == pytest.approx(2 / 2 ** 9) and result["lost"] == tasks[:9]
    assert len(result["score_changes"]) == 9
    assert "mean score: A 0.900, B 0.300; B - A -0.600" in capsys.readouterr().out


def test_score_statistics():
    assert sign_flip_p([0, 0]) == 1.0
    assert sign_flip_p([0.5, -0.5]) == 1.0
    assert sign_flip_p([-0.2] * 5) == pytest.approx(2 / 32)
    assert sign_flip_p([0.1, 0.2, -0.05, 0.3]) == pytest.approx(4 / 16)  # exact: |sum| >= 0.55 in 4 of 16 patterns
    many = [0.1] * 30 + [-0.1] * 10
    assert 0.001 < sign_flip_p(many) < 0.01  # Monte Carlo beyond 16 non-zero pairs, seeded
    assert sign_flip_p(many) == sign_flip_p(many)
    low, high = bootstrap_ci(many)
    assert low < 0.05 < high and low > 0
    s = compare_scores({"x": 0.2, "y": 0.4}, {"x": 0.3, "y": 0.4, "z": 1.0})
    assert s.n == 2 and s.diff == pytest.approx(0.05)
