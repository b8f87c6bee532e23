"""Collection of benchmark items: offline, from the shipped lists (no Docker needed)."""
import pytest



def test_lite_collects_the_80_ids_offline_and_markers_select_languages(pytester, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # collection must not need the network
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    from pytest_clawswe.swe.dataset import load_instances

    lite = {i.instance_id for i in load_instances("claw-swe-bench", lite=True)}
    r = pytester.runpytest_subprocess("--harness", "nop", "--lite", "--collect-only", "-q", "-p", "no:cacheprovider")
    ids = {line.split("::")[-1] for line in r.outlines if line.startswith("claw-swe-bench::")}
    assert ids == lite and len(ids) == 80
    r = pytester.runpytest_subprocess("--harness", "nop", "--lite", "--collect-only", "-q", "-m", "rust",
                                      "-p", "no:cacheprovider")
    assert len([line for line in r.outlines if line.startswith("claw-swe-bench::")]) == 10


def _rows_without_language(tmp_path, log_parser=None):
    import json

    from pytest_clawswe.swe.dataset import load_instances, load_row

    rows = []
    for inst in load_instances("demo"):
        row = dict(load_row(inst))
        del row["language"]
        if log_parser is not None:
            row["log_parser"] = log_parser
        rows.append(row)
    path = tmp_path / "rows.json"
    path.write_text(json.dumps(rows))
    return path


def test_every_marker_is_registered_so_strict_markers_works(pytester, tmp_path):
    path = _rows_without_language(tmp_path, log_parser="parse_log_homemade")
    r = pytester.runpytest_subprocess("--harness", "nop", "--dataset", str(path), "--collect-only", "-q",
                                      "--strict-markers", "-m", "unknown_language", "-p", "no:cacheprovider")
    assert r.ret == 0, r.stdout.str() + r.stderr.str()
    assert len([line for line in r.outlines if line.startswith("rows.json::")]) == 8
    # and it says why: the group could not be inferred
    assert "could not be inferred" in r.stdout.str() + r.stderr.str()


def test_the_language_group_is_inferred_from_the_log_parser(pytester, tmp_path):
    path = _rows_without_language(tmp_path)  # swebench 5 task repo rows carry log_parser, not language
    r = pytester.runpytest_subprocess("--harness", "nop", "--dataset", str(path), "--collect-only", "-q",
                                      "--strict-markers", "-m", "go", "-p", "no:cacheprovider")
    assert [line for line in r.outlines if line.startswith("rows.json::")] == ["rows.json::clawswe__semver-go-41"]


def _earlier_run(folder):
    """A project folder where an earlier run left its reports: swebench's test output beside run.json."""
    run = folder / "reports" / "oracle_demo_1"
    test_output = run / "instances" / "clawswe__tinyjson-py-12" / "eval" / "test_output.txt"
    test_output.parent.mkdir(parents=True)
    (run / "run.json").write_text('{"run_id": "oracle_demo_1", "benchmark": "swe"}\n')
    test_output.write_text("+ pytest tests\n>>>>> Start Test Output\n>>> x = 1\ntest_a PASSED\n"
                           ">>>>> End Test Output\n")


def test_claw_swe_benchs_options_list_its_items_with_no_harness(pytester, monkeypatch):
    """Issue 32 §5: a newcomer lists the Lite set before choosing a harness; without --harness or --benchmark no
    benchmark was on, pytest collected the folder, and the doctest plugin read an earlier run's test output."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    _earlier_run(pytester.path)
    r = pytester.runpytest_subprocess("--lite", "--collect-only", "-q", "--doctest-glob=*.txt", "-p",
                                      "no:cacheprovider")
    assert r.ret == 0, r.stdout.str()[-2000:]
    assert len([line for line in r.outlines if line.startswith("claw-swe-bench::")]) == 80
    r = pytester.runpytest_subprocess("--dataset", "demo", "-m", "go", "--collect-only", "-q", "-p", "no:cacheprovider")
    assert r.ret == 0, r.stdout.str()[-2000:]
    assert [line.split("::")[0] for line in r.outlines if "::" in line] == ["demo"]
    for given in (["--instance-ids", "clawswe__semver-go-41"], ["-m", "go or rust"]):
        r = pytester.runpytest_subprocess("--dataset", "demo", *given, "--collect-only", "-q", "-p",
                                          "no:cacheprovider")
        assert r.ret == 0 and any(line.startswith("demo::") for line in r.outlines), r.stdout.str()[-2000:]
    # a run needs a harness: one sentence, nothing run
    r = pytester.runpytest_subprocess("--lite", "-p", "no:cacheprovider")
    assert r.ret == 4 and "--harness" in r.stderr.str(), r.stderr.str()


def test_a_run_folder_is_never_collected_as_tests(pytester):
    _earlier_run(pytester.path)
    pytester.makepyfile(test_mine="def test_ok():\n    assert True\n")
    r = pytester.runpytest_subprocess("--doctest-glob=*.txt", "-p", "no:cacheprovider")
    assert r.ret == 0, r.stdout.str()[-2000:]
    r.assert_outcomes(passed=1)


def test_an_instance_item_carries_its_target_markers_keywords_and_hard_stop(pytester):
    """What the item's set-up gives (run/item/nodes.py's BenchmarkItem, swe/items.py's InstanceItem): the instance as
    the runner's target, its id, the benchmark's and the language's markers, -k's words and the whole item's stop."""
    from pytest_clawswe.harness.deadline import AGENT_ALLOWANCE_S, HARD_STOP_MARGIN_S, VERIFY_ALLOWANCE_S
    from pytest_clawswe.swe.items import SETUP_ALLOWANCE_S

    run = pytester.inline_run("--harness", "nop", "--dataset", "demo", "--instance-ids", "clawswe__semver-go-41",
                              "--budget", "600", "--eval-timeout", "300", "--collect-only", "-p", "no:cacheprovider",
                              "-n", "0")
    (item,) = run.getcalls("pytest_collection_finish")[0].session.items
    assert (item.item_id, item.target, item.instance) == ("clawswe__semver-go-41", item.instance, item.instance)
    assert item.instance.instance_id == "clawswe__semver-go-41" and item.result is None
    assert {"clawswe", "go"} <= {m.name for m in item.iter_markers()}
    assert {item.instance.language, item.instance.repo, item.instance.repo_name} <= item.extra_keyword_matches
    # nop: no wrapper grace; the agent and verify stages' own limits (their allowances) and the margin are in it
    assert item.get_closest_marker("timeout").args[0] == SETUP_ALLOWANCE_S + 600 + AGENT_ALLOWANCE_S + 300 \
        + VERIFY_ALLOWANCE_S + HARD_STOP_MARGIN_S


@pytest.mark.parametrize("options, grace, allowance", [((), 60.0, None), (("--harness-option", "grace=5"), 5.0, None),
                                                      (("--agent-allowance", "50"), 60.0, 50.0)])
def test_an_items_hard_stop_leaves_room_for_every_stage_and_the_harness_wrappers_grace(pytester, options, grace,
                                                                                     allowance):
    """The hard stop is the deadline's (harness/deadline.py): setup, the agent stage's own limit (the budget + its
    wrapper's grace (openclaw's released +60 s, or --harness-option grace) + --agent-allowance), and the verify
    stage's own limit (grade + allowance)."""
    from pytest_clawswe.harness.deadline import AGENT_ALLOWANCE_S, HARD_STOP_MARGIN_S, VERIFY_ALLOWANCE_S
    from pytest_clawswe.swe.items import SETUP_ALLOWANCE_S

    run = pytester.inline_run("--harness", "openclaw", "--model", "scripted/gold", *options, "--dataset", "demo",
                              "--instance-ids", "clawswe__semver-go-41", "--budget", "600", "--eval-timeout", "300",
                              "--collect-only", "-p", "no:cacheprovider", "-n", "0")
    (item,) = run.getcalls("pytest_collection_finish")[0].session.items
    hard = item.get_closest_marker("timeout").args[0]
    allowance = AGENT_ALLOWANCE_S if allowance is None else allowance
    assert hard == SETUP_ALLOWANCE_S + 600 + grace + allowance + 300 + VERIFY_ALLOWANCE_S + HARD_STOP_MARGIN_S
