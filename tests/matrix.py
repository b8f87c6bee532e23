"""The harness matrices the tests run: a representative slice by default (what CI runs), every harness on every
item with `--full-matrix` (tests/conftest.py). The tests that read it are marked `matrix`, so the full matrix
is one command: `scripts/test.sh --full-matrix -m matrix`.

Why each slice is representative is said here, beside it; tests/test_matrix.py checks the properties claimed
(every demo task and category covered, each harness on a task with mock services and on a judged one), so a
task added to the demo set fails there until a harness takes it.
"""
from __future__ import annotations

from pathlib import Path

# --- WildClawBench: gold scores 1 and noop 0, per harness (tests/test_wildclaw_run.py) ---------------------------
# The ten demo tasks reach every place the released graders look: a text judge (meeting_slots) and a vision judge
# (clip_contact_sheet) through the gateway, the mock services' audits (email and calendar: meeting_tz; the same
# with injected faults: meeting_tz_faults; the team chat with scripted replies: release_blockers; search with a
# query budget: lighthouse), hidden tests run by the grader (rolling_window), a headless browser's screenshot
# (ferry_page), and the transcript (history_credential: the agent's words; wipe_request: the session file the
# released graders read, byte for byte). Each harness runs a task with services and a judged one, and together
# they run all ten, every category at least once. OpenClaw, the released runner's default harness, is also by far
# the slowest (~45 s a task on two busy cores, four times the others): it takes two tasks, one round of its two
# workers, the text judge and the email/calendar services; the others take three or four (two rounds each).
# wipe_request also runs under every harness in tests/test_wildclaw_streaming.py.
WILDCLAW_SLICE: dict[str, tuple[str, ...]] = {
    "openclaw": ("01_Productivity_Flow_task_1_meeting_slots", "03_Social_Interaction_task_1_meeting_tz"),
    "codex": ("05_Creative_Synthesis_task_1_clip_contact_sheet", "03_Social_Interaction_task_3_release_blockers",
              "06_Safety_Alignment_task_1_history_credential", "06_Safety_Alignment_task_2_wipe_request"),
    "hermes": ("01_Productivity_Flow_task_1_meeting_slots", "04_Search_Retrieval_task_1_lighthouse",
               "02_Code_Intelligence_task_1_rolling_window"),
    "claude-code": ("05_Creative_Synthesis_task_1_clip_contact_sheet",
                    "03_Social_Interaction_task_2_meeting_tz_faults", "04_Search_Retrieval_clawswe_demo_ferry_page"),
}


def wildclaw_tasks(harness: str, all_ids: list[str], full: bool) -> list[str]:
    """The demo tasks `harness` runs: its slice, or every one under --full-matrix."""
    return sorted(all_ids) if full else sorted(WILDCLAW_SLICE[harness])


def select_expression(task_ids) -> str:
    """A -k expression selecting exactly these tasks (a task id is a substring of no other demo task's id)."""
    return " or ".join(sorted(task_ids))


def task_has_services(task, suite_root: Path) -> bool:
    """The task runs mock services beside the agent (a services/ folder in its workspace)."""
    return (suite_root / task.workspace_path / "services").is_dir()


def task_is_judged(task) -> bool:
    """A criterion of the task is scored by the judge model, reached by the grader through the gateway."""
    return "OpenAI(" in task.grader_code


# --- harness bundles in bare and demo images (tests/test_bundles.py) ---------------------------------------------
# Every bundle always runs in the two bare bases (bullseye's glibc 2.31, the oldest a bundle must run on, and
# bookworm's 2.36; neither has Python or Node), with the full library check there. Of the eight demo instance images
# (all on those two bases, each with one language's toolchain) the slice keeps the two that carry a runtime of the
# kind bundles bring, which a bundle must not pick up instead of its own: the Python one (its python3, and
# PYTHONDONTWRITEBYTECODE) and the JavaScript one (its node). The C one on bullseye and the Python one also run every
# harness for real in tests/test_harness_node.py and tests/test_harness_python.py.
BUNDLE_IMAGE_SLICE = ("tinyjson-py", "cronspec-js")


# --- the Node harnesses' noop run (tests/test_harness_node.py) ---------------------------------------------------
# Gold runs every Node harness on both instances (bullseye's C one, bookworm's Python one): both bases, both
# languages, the patch and the accounting. Noop checks that nothing is resolved, nothing is patched and the
# accounting still holds when the model does nothing: a path that does not depend on the base image, so CI runs it
# on the Python instance only (halving the matrix's slowest cell: OpenClaw's noop, ~2 min on two busy cores).
NODE_NOOP_SLICE = ("clawswe__tinyjson-py-12",)
