"""Where an item error happened (its `error_phase`, run/item/phases.py) reaches every run-level file that lists its
error: results.csv of both benchmarks (a column appended after the existing ones) and the Harbor export."""
from __future__ import annotations

import csv
import io

from pytest_clawswe.report.harbor_trial import exception_info
from pytest_clawswe.swe.results.run_dir import CSV_COLUMNS, InstanceResult, write_results_csv
from pytest_clawswe.wildclaw.results import TaskResult, results_csv

# results.csv's columns as they were before error_phase: a reader by position keeps working
SWE_COLUMNS = ["instance_id", "language", "repo", "harness", "model", "outcome", "resolved", "patch_applied",
               "finish_reason", "duration_s", "agent_s", "turns", "input_tokens", "output_tokens", "cache_read_tokens",
               "cache_write_tokens", "cache_hit_rate", "cost_usd", "patch_lines", "error", "health",
               "p2p_passed_at_base"]
WILD_COLUMNS = ["task_id", "category", "modality", "outcome", "overall_score", "finish_reason", "agent_s", "grade_s",
                "input_tokens", "output_tokens", "cost_usd", "judge_input_tokens", "judge_output_tokens", "error"]


def test_claw_swe_benchs_results_csv_has_the_phase_of_an_error_as_its_last_column(tmp_path):
    results = [InstanceResult("a__1", error="the evaluator crashed", error_type="InfraError", error_phase="score"),
               InstanceResult("b__2", outcome="resolved", resolved=True)]
    write_results_csv(tmp_path / "results.csv", results)
    with (tmp_path / "results.csv").open(newline="") as fh:
        header = next(csv.reader(fh))
    assert header == CSV_COLUMNS == [*SWE_COLUMNS, "error_phase"]
    with (tmp_path / "results.csv").open(newline="") as fh:
        rows = {row["instance_id"]: row for row in csv.DictReader(fh)}
    assert (rows["a__1"]["error"], rows["a__1"]["error_phase"]) == ("the evaluator crashed", "score")
    assert rows["b__2"]["error_phase"] == ""


def test_wildclaw_benchs_results_csv_has_the_phase_of_an_error_as_its_last_column():
    results = [TaskResult(task_id="01_t", error="the grader crashed", error_type="GradeError", error_phase="verify"),
               TaskResult(task_id="02_t", outcome="passed", overall_score=1.0)]
    header, *rows = list(csv.reader(io.StringIO(results_csv(results))))
    assert header == [*WILD_COLUMNS, "error_phase"]
    by_id = {row[0]: dict(zip(header, row)) for row in rows}
    assert (by_id["01_t"]["error"], by_id["01_t"]["error_phase"]) == ("the grader crashed", "verify")
    assert by_id["02_t"]["error_phase"] == ""


def test_harbors_exception_info_names_the_phase_in_its_message():
    """Harbor's ExceptionInfo has no field for it (exception_type, exception_message, exception_traceback,
    occurred_at): the message ends with it, as the report's error line does (ItemResult.error_line)."""
    error = {"outcome": "error", "error": "the evaluator crashed", "error_type": "InfraError", "error_phase": "score"}
    info = exception_info(error, True, None)
    assert info is not None and info["exception_type"] == "InfraError"
    assert info["exception_message"] == "the evaluator crashed (in phase score)"
    unknown = exception_info({**error, "error_phase": ""}, True, None)  # a result written before the field
    assert unknown is not None and unknown["exception_message"] == "the evaluator crashed"
