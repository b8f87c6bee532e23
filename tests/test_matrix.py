"""The slices CI runs of the harness matrices (tests/matrix.py) are what their comments claim: checked here from the
demo tasks themselves, so a task added to the demo set, or a slice changed, that breaks a claim fails here."""
from matrix import BUNDLE_IMAGE_SLICE, WILDCLAW_SLICE, select_expression, task_has_services, task_is_judged, wildclaw_tasks

from pytest_clawswe.swe.paths import DEMO_TASK_REPO
from pytest_clawswe.wildclaw.options import DEMO_DIR
from pytest_clawswe.wildclaw.task.file import parse_task, task_files

TASKS = {task.id: task for task in map(parse_task, task_files(DEMO_DIR))}
WILDCLAW_HARNESSES = ("claude-code", "openclaw", "codex", "hermes")  # tests/test_wildclaw_run.py's


def test_the_wildclaw_slice_runs_every_task_and_category_and_each_harness_on_services_and_a_judge():
    assert set(WILDCLAW_SLICE) == set(WILDCLAW_HARNESSES)
    assert set().union(*WILDCLAW_SLICE.values()) == set(TASKS)  # every demo task under some harness
    for harness, task_ids in WILDCLAW_SLICE.items():
        tasks = [TASKS[t] for t in task_ids]
        assert len(tasks) >= 2, harness
        assert any(task_has_services(t, DEMO_DIR) for t in tasks), f"{harness}: no task with mock services"
        assert any(task_is_judged(t) for t in tasks), f"{harness}: no judged task"
    # both kinds the slice counts on exist, and not everywhere (else the checks above would say nothing)
    assert 0 < sum(task_has_services(t, DEMO_DIR) for t in TASKS.values()) < len(TASKS)
    assert 0 < sum(task_is_judged(t) for t in TASKS.values()) < len(TASKS)


def test_full_matrix_takes_every_task_and_the_slice_selects_exactly_its_own():
    ids = sorted(TASKS)
    for harness, task_ids in WILDCLAW_SLICE.items():
        assert wildclaw_tasks(harness, ids, full=True) == ids
        chosen = wildclaw_tasks(harness, ids, full=False)
        assert chosen == sorted(task_ids)
        # what -k picks: a task is selected when one of the expression's names is a substring of its id
        names = select_expression(chosen).split(" or ")
        assert [t for t in ids if any(name in t for name in names)] == chosen


def test_the_bundle_slice_keeps_the_demo_images_with_a_python_or_a_node_of_their_own():
    dockerfiles = {p.parent.name: p.read_text() for p in (DEMO_TASK_REPO / "tasks").glob("*/Dockerfile")}
    chosen = {name: [i for i in dockerfiles if name in i] for name in BUNDLE_IMAGE_SLICE}
    assert all(len(ids) == 1 for ids in chosen.values()), chosen  # each names one demo instance
    kept = {ids[0] for ids in chosen.values()}
    own_runtime = {i for i, text in dockerfiles.items() if any(f" {pkg}" in text for pkg in ("python3", "nodejs"))}
    assert kept == own_runtime, (kept, own_runtime)
