"""A demo instance whose tests never end (test helper): the Docker and the cluster tests of --eval-timeout."""

DEMO_TESTS = "python3 -m pytest -rA -p no:cacheprovider tests"  # the Python demo's test command


def hung_tests_row(row: dict) -> dict:
    """The Python demo instance's row as clawswe__hungtests-1, its test command replaced by an hour's sleep."""
    assert DEMO_TESTS in row["eval_script"]  # (the demo's test command: replaced below)
    return {**row, "instance_id": "clawswe__hungtests-1",
            "eval_script": row["eval_script"].replace(DEMO_TESTS, "python3 -c 'import time; time.sleep(3600)'")}
