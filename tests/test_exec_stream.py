"""Issue 32 §4: a correct patch graded as empty under load. The engine's answer to an exec came back without its
beginning when this process read the answer's headers late (tests/late_reader.py holds that moment back on a real
engine); the collection took the whole diff for its list of big files. Against a real container and engine."""
from __future__ import annotations

import pytest

from pytest_clawswe.engine.sandbox.docker_workspace import Workspace
from pytest_clawswe.labels import LABEL_RUN
from late_reader import late_answers, stock_client

pytestmark = pytest.mark.docker
LABELS = {LABEL_RUN: "t-exec-stream"}
CHANGE = "printf 'def added():\\n    return 42\\n' > /testbed/added_by_agent.py"


def _first_then_second(client, ws) -> bytes:
    api = client.api
    exec_id = api.exec_create(ws.container.id, ["sh", "-c", "echo FIRST; sleep 1; echo SECOND"])["Id"]
    return b"".join(api.exec_start(exec_id, stream=True))


def test_an_answer_read_late_keeps_its_beginning(docker_client, python_demo):
    """The cause, on the engine: docker-py as shipped loses what came before its headers were read (kept as the
    evidence: when it stops failing, docker-py reads its buffer itself); the run's client does not."""
    with Workspace(docker_client, python_demo.image, labels=LABELS) as ws:
        with late_answers() as held:
            assert _first_then_second(stock_client(docker_client), ws) == b"SECOND\n"
            assert _first_then_second(docker_client, ws) == b"FIRST\nSECOND\n"
            # both of the workspace's ways to exec: with a deadline (one stream), without (two)
            assert ws.exec("echo FIRST; sleep 1; echo SECOND", timeout=60).stdout == "FIRST\nSECOND\n"
            assert ws.exec("echo FIRST; sleep 1; echo SECOND >&2").output == "FIRST\nSECOND\n"
        assert len(held) == 4


def _expected_patch(ws) -> tuple[str, str]:
    base = ws.exec("git rev-parse HEAD", workdir="/testbed", check=True).stdout.strip()
    ws.exec(CHANGE, check=True)
    expected = ws.exec("git add -A && git diff --cached --no-color HEAD && git reset -q", workdir="/testbed",
                       check=True).stdout
    assert "added_by_agent.py" in expected
    return base, expected


def test_the_collection_read_late_is_the_agents_patch(docker_client, python_demo):
    """Read late every time, the run's client gets every answer whole: the diff, not 'larger than 50 MiB'."""
    from pytest_clawswe.swe.instance.patch import collect_patch

    with Workspace(docker_client, python_demo.image, labels=LABELS) as ws:
        base, expected = _expected_patch(ws)
        with late_answers() as held:
            patch = collect_patch(ws, base, gitignore=False)
        assert held
    assert patch.raw == expected and patch.clean == expected, patch.dropped
    assert patch.dropped == []


def test_a_collection_whose_beginning_was_lost_is_read_again(docker_client, python_demo):
    """docker-py as shipped, its first answer read late (the incident: the first line lost, the rest whole): the
    answer's missing start line is seen, it is read once more, and the patch is the agent's."""
    from pytest_clawswe.swe.instance.patch import collect_patch

    with Workspace(stock_client(docker_client), python_demo.image, labels=LABELS) as ws:
        base, expected = _expected_patch(ws)
        reads = []
        exec_ = ws.exec

        def counted(*args, **kwargs):
            reads.append(args)
            return exec_(*args, **kwargs)

        ws.exec = counted  # type: ignore[method-assign]
        with late_answers(times=1) as held:
            patch = collect_patch(ws, base, gitignore=False)
        assert len(held) == 1
    assert patch.raw == expected and patch.dropped == []
    assert len(reads) == 2


def _grade(client, python_demo, tmp_path, name: str):
    from pytest_clawswe.swe.dataset import load_row
    from pytest_clawswe.swe.grading.scoring import join_removals, score

    row = load_row(python_demo)
    try:
        return score(client, row, row["patch"], run_id=f"t-exec-stream-{name}", model_label="gold",
                     eval_dir=tmp_path / name / "eval", labels=LABELS, timeout=600)
    finally:
        join_removals()


@pytest.mark.timeout(900)
def test_an_evaluation_whose_test_output_lost_its_beginning_is_no_verdict(docker_client, python_demo, tmp_path):
    """docker-py as shipped, the eval script's output read late until its start line had come (so swebench's
    `>>>>> Start Test Output` was lost with it): no test parsed, and the gold patch read as unresolved. Its missing
    first line is seen, and the item errors instead; the run's client, read as late, grades it resolved."""
    from pytest_clawswe.errors import InfraError
    from swebench.harness.constants import START_TEST_OUTPUT

    def eval_script(cmd) -> bool:
        return "/eval.sh" in str(cmd)

    with late_answers(until=START_TEST_OUTPUT.encode(), only=eval_script) as held:
        with pytest.raises(InfraError, match="without its beginning"):
            _grade(stock_client(docker_client), python_demo, tmp_path, "stock")
        assert len(held) == 1
        graded = _grade(docker_client, python_demo, tmp_path, "ours")
        assert len(held) == 2
    assert graded.resolved, graded
    output = (tmp_path / "ours" / "eval" / "test_output.txt").read_text()
    assert output.startswith("+ ") and "clawswe-frame" not in output  # what swebench would write, byte for byte
