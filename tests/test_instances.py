import json

import pytest

from pytest_clawswe.errors import DatasetError
from pytest_clawswe.swe.dataset import (
    LANGUAGE_MARKERS,
    load_instances,
    load_row,
    read_instances_file,
    select,
    swebench_image_name,
    validate_row,
)


def test_shipped_lists_match_the_paper():
    full = load_instances("claw-swe-bench")
    lite = load_instances("claw-swe-bench", lite=True)
    assert len(full) == 350 and len(lite) == 80
    counts = {}
    for inst in full:
        counts[inst.language] = counts.get(inst.language, 0) + 1
    assert counts == {"Java": 43, "Go": 42, "Rust": 43, "JS/TS": 43, "C/C++": 42, "Ruby": 44, "PHP": 43,
                      "Python": 50}
    assert len({i.repo for i in full}) == 43
    assert all(sum(i.language == lang for i in lite) == 10 for lang in LANGUAGE_MARKERS)
    assert {i.instance_id for i in lite} <= {i.instance_id for i in full}
    assert len(load_instances("multilingual")) == 300 and len(load_instances("verified-mini")) == 50


def test_image_naming_follows_swebench():
    assert swebench_image_name("django__django-11099") == "swebench/sweb.eval.x86_64.django_1776_django-11099:latest"
    inst = next(i for i in load_instances("claw-swe-bench") if i.instance_id == "burntsushi__ripgrep-2209")
    assert inst.image == "swebench/sweb.eval.x86_64.burntsushi_1776_ripgrep-2209:latest"
    assert inst.setup_gitignore and inst.source == "hf:SWE-bench/SWE-bench_Multilingual"


def row(iid="o__r-1", **over):
    base = {"instance_id": iid, "repo": "o/r", "version": "1", "base_commit": "abc", "problem_statement": "p",
            "FAIL_TO_PASS": ["t1"], "PASS_TO_PASS": [], "log_parser": "parse_log_pytest", "eval_type": "pass_and_fail",
            "eval_script": "#!/bin/bash\n", "patch": "", "language": "rust"}
    base.update(over)
    return base


@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".parquet"])
def test_local_files_load(tmp_path, suffix):
    rows = [row("o__r-2"), row("o__r-1")]
    path = tmp_path / f"d{suffix}"
    if suffix == ".json":
        path.write_text(json.dumps(rows))
    elif suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        import pandas as pd

        pd.DataFrame(rows).to_parquet(path)
    insts = load_instances(str(path))
    assert [i.instance_id for i in insts] == ["o__r-1", "o__r-2"]
    assert insts[0].language == "Rust" and insts[0].image == swebench_image_name("o__r-1")
    assert load_row(insts[0])["base_commit"] == "abc"


def test_datasets_save_to_disk_folder(tmp_path):
    import datasets

    datasets.Dataset.from_list([row()]).save_to_disk(str(tmp_path / "ds"))
    assert [i.instance_id for i in load_instances(str(tmp_path / "ds"))] == ["o__r-1"]


def test_malformed_row_names_the_missing_field(tmp_path):
    bad = row()
    del bad["eval_script"]
    with pytest.raises(DatasetError, match="lacks eval_script"):
        validate_row(bad, "x")
    path = tmp_path / "d.json"
    path.write_text(json.dumps([{"repo": "o/r"}]))
    with pytest.raises(DatasetError, match="no instance_id"):
        load_instances(str(path))
    path.write_text("{not json")
    with pytest.raises(DatasetError, match="could not read dataset"):
        load_instances(str(path))


def test_duplicate_ids_and_unknown_ids_are_errors(tmp_path):
    path = tmp_path / "d.json"
    path.write_text(json.dumps([row(), row()]))
    with pytest.raises(DatasetError, match="twice"):
        load_instances(str(path))
    with pytest.raises(DatasetError, match="not in the selected dataset: nope__x-1"):
        select(load_instances("claw-swe-bench"), ["nope__x-1"])


def test_instances_file_text_and_json(tmp_path):
    txt = tmp_path / "ids.txt"
    txt.write_text("# chosen\nburntsushi__ripgrep-2209\n\ndjango__django-11790  # why\n")
    assert read_instances_file(txt) == ["burntsushi__ripgrep-2209", "django__django-11790"]
    js = tmp_path / "ids.json"
    js.write_text(json.dumps({"instances": [{"instance_id": "a__b-1"}, {"instance_id": "c__d-2"}]}))
    assert read_instances_file(js) == ["a__b-1", "c__d-2"]
    picked = select(load_instances("claw-swe-bench"), read_instances_file(txt))
    assert [i.instance_id for i in picked] == ["burntsushi__ripgrep-2209", "django__django-11790"]


def test_missing_dataset_path_says_what_to_pass(tmp_path):
    with pytest.raises(DatasetError, match="does not exist"):
        load_instances(str(tmp_path / "nope"))
    with pytest.raises(DatasetError, match="--lite"):
        load_instances(str(tmp_path), lite=True)
