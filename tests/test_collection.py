"""Collection of benchmark items: offline, from the shipped lists (no Docker needed)."""


def test_lite_collects_the_80_ids_offline_and_markers_select_languages(pytester, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # collection must not need the network
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    from pytest_clawswe.instances import load_instances

    lite = {i.instance_id for i in load_instances("claw-swe-bench", lite=True)}
    r = pytester.runpytest_subprocess("--harness", "nop", "--lite", "--collect-only", "-q", "-p", "no:cacheprovider")
    ids = {line.split("::")[-1] for line in r.outlines if line.startswith("claw-swe-bench::")}
    assert ids == lite and len(ids) == 80
    r = pytester.runpytest_subprocess("--harness", "nop", "--lite", "--collect-only", "-q", "-m", "rust",
                                      "-p", "no:cacheprovider")
    assert len([line for line in r.outlines if line.startswith("claw-swe-bench::")]) == 10
