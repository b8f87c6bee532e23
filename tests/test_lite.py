"""Lite selection on synthetic calibration data with a known truth (difficulty, column strength)."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from pytest_clawswe.cli import main
from pytest_clawswe.files import write_atomic
from pytest_clawswe.swe.dataset import load_instances, read_instances_file
from pytest_clawswe.swe.lite import (
    Gates,
    Weights,
    gate_report,
    kendall_tau_b,
    load_calibration,
    quartile_quota,
    select,
    synthetic_calibration,
    write_long_table,
)
from pytest_clawswe.swe.lite.selection import Problem
from pytest_clawswe.swe.results.run_dir import InstanceResult

LANGUAGES = ["Java", "Go", "Rust", "JS/TS", "C/C++", "Ruby", "PHP", "Python"]
RESTARTS = 40  # enough for the properties below; the default 200 is for real use and the benchmark


def calibration(seed: int = 0, per_language: int = 36, columns: int = 12):
    return synthetic_calibration([lang for lang in LANGUAGES for _ in range(per_language)], columns, seed)


@pytest.fixture(scope="module")
def cal():
    return calibration()[0]


@pytest.fixture(scope="module")
def random_masks(cal):
    problem = Problem(cal, 8)
    rng = np.random.default_rng(123)
    return problem, [problem.random_mask(rng) for _ in range(200)]


# -- hard constraints ------------------------------------------------------------------------------


def test_quota_is_2_3_3_2_at_ten_and_scales_by_share():
    assert quartile_quota(10) == (2, 3, 3, 2)
    for k in range(1, 41):
        quota = quartile_quota(k)
        assert sum(quota) == k
        # each quartile within one instance of its 20/30/30/20 % share, and the middle never lighter
        assert all(abs(q - k * share) < 1 for q, share in zip(quota, (0.2, 0.3, 0.3, 0.2)))
        assert quota[1] + quota[2] >= quota[0] + quota[3]


@pytest.mark.parametrize("data_seed,k", [(0, 4), (1, 7), (2, 10), (3, 12)])
def test_constraints_hold(data_seed, k):
    cal, _, _ = calibration(data_seed)
    cal.resolved[::7, 1] = np.nan  # missing outcomes must not break anything
    cal.resolved[5] = np.nan  # an instance no column measured cannot be placed in a quartile
    sel = select(cal, k, RESTARTS, seed=data_seed)
    rows = sel.rows()
    ids = [r["instance_id"] for r in rows]
    assert len(ids) == len(set(ids)) == k * len(LANGUAGES)
    assert cal.instance_ids[5] not in ids
    assert Counter(r["language"] for r in rows) == {lang: k for lang in LANGUAGES}
    quota = quartile_quota(k)
    for lang in LANGUAGES:
        counts = Counter(r["quartile"] for r in rows if r["language"] == lang)
        assert [counts[q] for q in (1, 2, 3, 4)] == list(quota)
    # quartiles: the mean resolved rate over columns, ranked within the language, Q1 easiest
    row_of = {iid: i for i, iid in enumerate(cal.instance_ids)}
    for r in rows:
        outcomes = cal.resolved[row_of[r["instance_id"]]]
        assert r["difficulty"] == pytest.approx(np.nanmean(outcomes), abs=1e-4)
    for lang in sel.problem.langs:
        rates = [np.nanmean(cal.resolved[m]) for m in lang.members]
        by_q = [[rate for rate, q in zip(rates, lang.quartile) if q == quartile] for quartile in range(4)]
        assert max(map(len, by_q)) - min(map(len, by_q)) <= 1
        for easier, harder in zip(by_q, by_q[1:]):
            assert min(easier) >= max(harder)


def test_too_few_instances_for_k_is_a_user_error():
    cal, _, _ = calibration(per_language=12)
    with pytest.raises(Exception, match="too few for K=12.*at most"):
        select(cal, 12, RESTARTS)


# -- what the optimisation buys ---------------------------------------------------------------------


def test_objective_far_below_random_subsets_with_same_quotas(cal, random_masks):
    problem, masks = random_masks
    random_totals = [problem.terms(m)["total"] for m in masks]
    for seed in range(3):
        total = select(cal, 8, RESTARTS, seed, problem=problem).objective()["total"]
        assert total < 0.5 * np.median(random_totals)
        assert total < min(random_totals)


def test_ranking_agreement_beats_random_subsets(cal, random_masks):
    problem, masks = random_masks
    random_gates = [gate_report(problem, m)["ranking"] for m in masks]
    random_agreement = np.array([g["pair_agreement"] for g in random_gates])
    random_tau = np.array([g["kendall_tau"] for g in random_gates])
    taus = []
    for seed in range(3):
        ranking = gate_report(problem, select(cal, 8, RESTARTS, seed, problem=problem).selected)["ranking"]
        assert ranking["ordered_pairs"] > 20  # the data do have an order to keep
        assert ranking["pair_agreement"] >= np.percentile(random_agreement, 90)
        taus.append(ranking["kendall_tau"])
    assert np.mean(taus) > np.percentile(random_tau, 75)


def test_column_order_follows_the_known_strengths(cal):
    # sanity of the synthetic truth the other tests rely on: stronger columns resolve more
    _, _, strength = calibration()
    assert kendall_tau_b(strength, np.nanmean(cal.resolved, axis=0)) > 0.7


def test_cost_term_keeps_lite_cost_proportional(cal):
    aware = select(cal, 8, RESTARTS, 0).objective()["cost"]
    blind = select(cal, 8, RESTARTS, 0, Weights(cost_alpha=0.0)).objective()["cost"]
    assert aware < 0.5 * blind


def test_gates_pass_the_optimised_subset_and_fail_the_hardest(cal):
    problem = Problem(cal, 8)
    good = gate_report(problem, select(cal, 8, RESTARTS, 0, problem=problem).selected)
    assert good["rate_parity"]["passed"] and good["cost"]["passed"]
    hardest = np.zeros(len(cal.instance_ids), dtype=bool)
    for lang in problem.langs:
        hardest[lang.members[-8:]] = True  # members run easiest first
    bad = gate_report(problem, hardest)
    assert not bad["passed"] and not bad["rate_parity"]["passed"]
    assert bad["rate_parity"]["max_abs_diff"] > 0.2


def test_same_seed_same_subset_and_the_seed_matters(cal):
    first = select(cal, 8, RESTARTS, seed=7).instance_ids
    assert select(cal, 8, RESTARTS, seed=7).instance_ids == first
    assert select(cal, 8, RESTARTS, seed=7, problem=Problem(cal, 8)).instance_ids == first
    single_starts = {tuple(select(cal, 8, 1, seed).instance_ids) for seed in range(5)}
    assert len(single_starts) > 1


def test_kendall_tau_b_matches_scipy():
    from scipy import stats  # a declared test dependency: missing it must fail, not skip
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 5, 15).astype(float), rng.integers(0, 5, 15).astype(float)  # with ties
    assert kendall_tau_b(x, y) == pytest.approx(stats.kendalltau(x, y).statistic)


# -- inputs ----------------------------------------------------------------------------------------

LONG_TABLE = """column,instance_id,language,resolved,cost_usd
openclaw x GLM 5.1,django__django-11099,Python,1,0.42
hermes x GLM 5.1,django__django-11099,python,0,0.31
openclaw x GLM 5.1,serde-rs__serde-2798,Rust,true,
hermes x GLM 5.1,serde-rs__serde-2798,,,1.5
"""

WIDE_TABLE = """instance_id,language,cost_usd,openclaw x GLM 5.1,hermes x GLM 5.1,cost_usd:hermes x GLM 5.1
django__django-11099,Python,0.42,1,0,0.31
serde-rs__serde-2798,Rust,,yes,,1.5
"""


@pytest.mark.parametrize("text", [LONG_TABLE, WIDE_TABLE], ids=["long", "wide"])
def test_table_forms_read_the_same(tmp_path, text):
    path = tmp_path / "calibration.csv"
    path.write_text(text)
    cal = load_calibration([path])
    assert cal.instance_ids == ["django__django-11099", "serde-rs__serde-2798"]
    assert list(cal.languages) == ["Python", "Rust"]  # "python" normalised, the empty one stays the row's
    col = {c: j for j, c in enumerate(cal.columns)}
    o, h = col["openclaw x GLM 5.1"], col["hermes x GLM 5.1"]
    np.testing.assert_array_equal(cal.resolved[:, o], [1.0, 1.0])
    assert cal.resolved[0, h] == 0.0 and np.isnan(cal.resolved[1, h])  # empty resolved = missing
    assert cal.cost[0, o] == 0.42 and cal.cost[0, h] == 0.31 and cal.cost[1, h] == 1.5
    assert np.isnan(cal.cost[1, o])


def test_long_table_round_trip(tmp_path):
    cal, _, _ = calibration(per_language=6, columns=3)
    cal.resolved[0, 0] = np.nan
    cal.cost[1, 2] = np.nan
    write_long_table(cal, tmp_path / "cal.csv")
    back = load_calibration([tmp_path / "cal.csv"])
    assert back.instance_ids == cal.instance_ids and back.columns == cal.columns
    assert list(back.languages) == list(cal.languages)
    np.testing.assert_array_equal(back.resolved, cal.resolved)
    np.testing.assert_allclose(back.cost, cal.cost, equal_nan=True)


@pytest.mark.parametrize("text,message", [
    ("column,instance_id,language,resolved,cost_usd\na,x__y-1,Go,maybe,1\n", r"cal.csv:2: resolved is 'maybe'"),
    ("column,instance_id,language,resolved,cost_usd\na,x__y-1,Go,1,-3\n", "cannot be negative"),
    ("column,instance_id,language,resolved,cost_usd\na,x__y-1,Go,1,1\na,x__y-1,Go,0,1\n", "twice"),
    ("column,instance_id,language,resolved,cost_usd\na,x__y-1,Go,1,1\nb,x__y-1,Rust,1,1\n", "two languages"),
    ("column,instance_id,language,resolved,cost_usd\na,not-shipped-1,,1,1\n", "has no language"),
    ("column,instance_id,language,resolved,cost_usd\na,x__y-1,Go,,1\n", "no resolved outcome"),
    ("id,lang\n1,Go\n", "no instance_id column"),
])
def test_bad_tables_are_user_errors(tmp_path, capsys, text, message):
    path = tmp_path / "cal.csv"
    path.write_text(text)
    assert main(["lite", "select", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err, err


def test_shipped_languages_fill_gaps(tmp_path):
    shipped = load_instances()[:2]
    path = tmp_path / "cal.csv"
    path.write_text("column,instance_id,language,resolved,cost_usd\n" +
                    "".join(f"a,{inst.instance_id},,1,0.5\n" for inst in shipped))
    assert list(load_calibration([path]).languages) == [inst.language for inst in shipped]


def write_run_dirs(root: Path, cal, harnesses: list[str]) -> list[Path]:
    """One run directory per column, as a benchmark run leaves them."""
    dirs = []
    for j, _column in enumerate(cal.columns):
        run = root / f"run{j}"
        harness = harnesses[j % len(harnesses)]
        write_atomic(run / "run.json", json.dumps({"harness": harness, "model": f"m{j // len(harnesses)}"}))
        for i, iid in enumerate(cal.instance_ids):
            res = None if np.isnan(cal.resolved[i, j]) else bool(cal.resolved[i, j])
            result = InstanceResult(iid, harness=harness, language=str(cal.languages[i]), resolved=res,
                                    outcome="error" if res is None else "resolved" if res else "unresolved",
                                    cost_usd=float(cal.cost[i, j]))
            write_atomic(run / "instances" / iid / "metadata.json", json.dumps(result.to_json()))
        dirs.append(run)
    return dirs


def test_run_directories_are_columns(tmp_path):
    cal, _, _ = calibration(per_language=5, columns=3)
    cal.resolved[2, 1] = np.nan  # an infrastructure error
    dirs = write_run_dirs(tmp_path, cal, ["openclaw", "hermes"])
    (dirs[2] / "run.json").unlink()  # no run.json: the column takes the directory's name
    back = load_calibration(dirs)
    assert back.columns == ["openclaw x m0", "hermes x m0", "run2"]
    assert back.instance_ids == cal.instance_ids
    np.testing.assert_array_equal(back.resolved, cal.resolved)  # None -> missing, not a failure
    np.testing.assert_allclose(back.cost, cal.cost)
    twice = load_calibration([dirs[0], dirs[0]])
    assert twice.columns == ["openclaw x m0", "openclaw x m0 (run0)"]


def test_missing_and_empty_sources_are_user_errors(tmp_path, capsys):
    assert main(["lite", "select", str(tmp_path / "nope")]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["lite", "sweep", str(tmp_path / "empty")]) == 2
    assert "no finished instances" in capsys.readouterr().err


# -- the commands ----------------------------------------------------------------------------------


def test_select_command_writes_an_instances_file_and_report(tmp_path, capsys):
    shipped = load_instances()
    cal, _, _ = synthetic_calibration([i.language for i in shipped], 6, 1, [i.instance_id for i in shipped])
    dirs = write_run_dirs(tmp_path / "runs", cal, ["openclaw", "nanobot", "zeroclaw"])
    out, report = tmp_path / "ids.txt", tmp_path / "report.json"
    argv = ["lite", "select", *map(str, dirs), "--k", "5", "--restarts", "20", "--seed", "3",
            "--out", str(out), "--report", str(report)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "selected 40 instances" in printed and "rate parity" in printed
    ids = read_instances_file(out)
    data = json.loads(report.read_text())
    assert ids == [r["instance_id"] for r in data["instances"]]
    assert read_instances_file(report) == ids  # the report works as --instances-file too
    from pytest_clawswe.swe.dataset import select as narrow
    assert {i.instance_id for i in narrow(shipped, ids)} == set(ids)  # the runner accepts every id
    assert {r["language"] for r in data["instances"]} == set(LANGUAGES)
    assert set(data["objective"]) == {"total", "parity", "ranking", "cost"}
    assert data["objective"]["total"] < data["random_baseline"]["median"]
    assert {"rate_parity", "ranking", "cost", "passed"} <= set(data["gates"])
    first = out.read_text()
    assert main(argv) == 0 and out.read_text() == first  # same seed, same file


def test_select_to_stdout_and_pool(tmp_path, capsys, cal):
    table = tmp_path / "cal.csv"
    write_long_table(cal, table)
    pool = [iid for i, iid in enumerate(cal.instance_ids) if i % 3]  # two thirds of the instances
    (tmp_path / "pool.txt").write_text("# my pool\n" + "\n".join(pool) + "\n")
    argv = ["lite", "select", str(table), "--k", "4", "--restarts", "10"]
    assert main([*argv, "--pool", str(tmp_path / "pool.txt")]) == 0
    captured = capsys.readouterr()
    ids = [line for line in captured.out.splitlines() if not line.startswith("#")]
    assert len(ids) == 32 and set(ids) <= set(pool)
    assert "objective" in captured.err  # the summary stays off stdout when stdout carries the ids
    (tmp_path / "bad_pool.txt").write_text("nobody__nothing-1\n")
    assert main(["lite", "select", str(table), "--pool", str(tmp_path / "bad_pool.txt")]) == 2
    assert "no calibration results" in capsys.readouterr().err


def test_sweep_reports_smallest_k_passing_every_run(tmp_path, capsys, cal):
    table = tmp_path / "cal.csv"
    write_long_table(cal, table)
    report = tmp_path / "sweep.json"
    # gates every selection meets: every K passes, so K* is the smallest K asked for and the exit code 0
    lenient = ["--gate-rate-mean", "1", "--gate-rate-max", "1", "--gate-pair-agreement", "0",
               "--gate-kendall-tau", "-1", "--gate-cost-dev", "1000"]
    code = main(["lite", "sweep", str(table), "--ks", "5-8", "--restarts", "10", "--seeds", "2",
                 "--report", str(report), *lenient])
    data = json.loads(report.read_text())
    assert len(data["perturbations"]) == 4  # 2 seeds x (full, half restarts)
    assert [row["k"] for row in data["ks"]] == [5, 6, 7, 8]
    assert all(row["all_passed"] and row["passed_runs"] == row["runs"] == 4 for row in data["ks"]), data["ks"]
    assert (data["k_star"], code) == (5, 0)
    capsys.readouterr()
    # impossible gates: no K passes, and the command says so with a failing exit code
    assert main(["lite", "sweep", str(table), "--ks", "5,6", "--restarts", "5", "--seeds", "1",
                 "--report", str(report), "--gate-rate-max", "0"]) == 1
    assert "no K passed" in capsys.readouterr().out
    data = json.loads(report.read_text())
    assert data["k_star"] is None and not any(row["all_passed"] for row in data["ks"])


def test_sweep_marks_infeasible_k(cal):
    from pytest_clawswe.swe.lite import sweep

    result = sweep(cal, [8, 40], restarts=5, n_seeds=1, gates=Gates())
    assert result["ks"][1] == {"k": 40, "feasible": False, "reason": result["ks"][1]["reason"]}
    assert "too few" in result["ks"][1]["reason"]
