"""The evaluation container made ahead runs swebench's `mkdir -p` commands and copies the eval script while the
agent works (issue 25 §4): the evaluation itself then runs only the calls that need the patch, and still grades
the same; a copy that is not the same file is made for real."""
import itertools
import time
import uuid

import pytest
from run_containers import run_containers

from pytest_clawswe.labels import LABEL_RUN
from pytest_clawswe.swe.dataset import load_row

pytestmark = pytest.mark.docker


def _copies(docker_client, container_id: str, since: float, until: float) -> int:
    """put_archive calls (the engine's extract-to-dir events)."""
    events = docker_client.events(since=int(since) - 1, until=int(until) + 1, decode=True,
                                  filters={"type": "container", "container": container_id})
    return sum(1 for e in events if e["Action"].startswith("extract-to-dir") and e["time"] >= int(since))


def _execs(docker_client, container_id: str, since: float, until: float) -> list[str]:
    events = docker_client.events(since=int(since) - 1, until=int(until) + 1, decode=True,
                                  filters={"type": "container", "container": container_id})
    return [e["Action"].split(": ", 1)[1] for e in events if e["Action"].startswith("exec_create: ")
            and e["time"] >= int(since)]


def test_the_evaluation_runs_no_mkdir_in_a_container_made_ahead(docker_client, python_demo, tmp_path):
    from pytest_clawswe.swe.grading.scoring import EvalContainer, join_removals, score

    run_id = f"t-staged-{uuid.uuid4().hex[:6]}"
    labels = {LABEL_RUN: run_id}
    row = load_row(python_demo)
    ahead = EvalContainer(docker_client, row, run_id, labels, after_s=0)
    ahead._thread.join()
    made = ahead.container
    time.sleep(1.1)  # events are filtered by whole seconds
    since = time.time()
    s = score(docker_client, row, python_demo.row["patch"], run_id=run_id, model_label="t", eval_dir=tmp_path,
              labels=labels, ahead=ahead)
    ran = _execs(docker_client, made.id, since, time.time())
    copies = _copies(docker_client, made.id, since, time.time())
    join_removals()
    assert copies == 1, copies  # the patch; the eval script was copied ahead
    diffs = [cmd for cmd in ran if cmd.startswith("git -c core.fileMode=false diff")]
    assert len(diffs) == 1, ran  # the one after the tests; the one before ran with the apply
    assert s.resolved is True
    assert not [cmd for cmd in ran if cmd.startswith("mkdir")], ran
    assert any("git apply" in cmd for cmd in ran) and any("/eval.sh" in cmd for cmd in ran), ran
    assert run_containers(docker_client, run_id) == []


def test_an_archive_that_is_not_the_staged_eval_script_is_copied_for_real(docker_client, python_demo):
    """The answer from ahead is for the same file only: other bytes, another mode or another name go to the engine."""
    from pytest_clawswe.engine.sandbox.docker_workspace import Workspace
    from pytest_clawswe.swe.grading.eval_staging import MadeAhead, _tar_like_swebench

    with Workspace(docker_client, python_demo.image, labels={LABEL_RUN: "t-staged-copy"}, network="none") as ws:
        made = MadeAhead(ws.container, "echo one\n")
        assert ws.exec("cat /eval.sh").stdout == "echo one\n"  # copied ahead
        assert made.put_archive("/", _tar_like_swebench("eval.sh", "echo two\n"))
        assert ws.exec("cat /eval.sh").stdout == "echo two\n"  # not the same: copied for real
        assert made.put_archive("/", _tar_like_swebench("other.sh", "echo one\n"))
        assert ws.exec("cat /other.sh").stdout == "echo one\n"

        same = MadeAhead(ws.container, "echo three\n")
        ws.exec("rm /eval.sh", check=True)
        assert same.put_archive("/", _tar_like_swebench("eval.sh", "echo three\n"))  # answered from ahead
        assert ws.exec("test -e /eval.sh").exit_code != 0  # (proof that it was not copied again)
        assert same.put_archive("/", _tar_like_swebench("eval.sh", "echo three\n"))  # once: the second is real
        assert ws.exec("cat /eval.sh").stdout == "echo three\n"


def _block(log: str, title: str) -> str:
    """The text swebench logged under `title` (up to its next log line)."""
    lines = log.split(title, 1)[1].splitlines()[1:]
    return "\n".join(line for line in itertools.takewhile(lambda x: " - INFO - " not in x, lines))


def test_the_apply_and_diff_in_one_exec_log_what_swebench_logs_alone(docker_client, python_demo, tmp_path):
    """The same patch graded by swebench making every call itself and with the calls made ahead: the same apply
    output, the same diff before the tests, the same verdict."""
    from pytest_clawswe.swe.grading.scoring import EvalContainer, join_removals, score

    row = load_row(python_demo)
    logs = {}
    for how in ("alone", "ahead"):
        run_id = f"t-staged-{how}-{uuid.uuid4().hex[:6]}"
        ahead = None
        if how == "ahead":
            ahead = EvalContainer(docker_client, row, run_id, {LABEL_RUN: run_id}, after_s=0)
            ahead._thread.join()
        s = score(docker_client, row, python_demo.row["patch"], run_id=run_id, model_label="t",
                  eval_dir=tmp_path / how, labels={LABEL_RUN: run_id}, ahead=ahead)
        assert s.resolved is True
        logs[how] = (tmp_path / how / "run_instance.log").read_text()
    join_removals()
    for title in ("Applied Patch:", "Git diff before:", "Git diff after:"):
        assert _block(logs["ahead"], title) == _block(logs["alone"], title), title
    assert "diff --git" in _block(logs["ahead"], "Git diff before:")
    assert "Git diff changed" not in logs["ahead"]


def test_a_failed_apply_leaves_no_diff_to_answer(docker_client, python_demo):
    """run_instance's fallbacks and their diff run for real; a diff is answered only right after the apply."""
    from pytest_clawswe.engine.sandbox.docker_workspace import Workspace
    from pytest_clawswe.swe.grading.eval_staging import APPLY, DIFF, MadeAhead

    with Workspace(docker_client, python_demo.image, labels={LABEL_RUN: "t-staged-apply"}, network="none") as ws:
        made = MadeAhead(ws.container)
        ws.write_file("/tmp/patch.diff", "not a patch\n")
        kw = {"workdir": "/testbed", "user": "root"}
        failed = made.exec_run(APPLY, **kw)
        assert failed.exit_code != 0 and made._diff is None
        ws.write_file("/testbed/README.staged", "x")  # untracked: not in `git diff`
        ws.exec("cd /testbed && git ls-files | head -1 | xargs -I{} sh -c 'echo change >> {}'", check=True)
        assert b"change" in made.exec_run(DIFF, workdir="/testbed").output  # run now, not from a stored answer

        ws.exec("cd /testbed && git checkout -q -- .", check=True)
        ws.write_file("/tmp/patch.diff", python_demo.row["patch"])
        applied = made.exec_run(APPLY, **kw)
        assert applied.exit_code == 0 and b"Applied patch" in applied.output and b"diff --git" not in applied.output
        made.exec_run("true")  # another call in between: the stored diff is dropped
        assert made._diff is None
