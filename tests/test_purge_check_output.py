"""The purge check's reading of its own script's output (pure logic: a workspace that answers with fixed text, in
the frame of the call, engine/framing/framed.py)."""
import re

import pytest

from pytest_clawswe.engine.workspace import ExecResult
from pytest_clawswe.errors import InfraError
from pytest_clawswe.swe.instance import prepare as prep

BASE = "a" * 40


def framed(argv: list[str], output: str) -> str:
    """`output` as the framed script in argv prints it."""
    nonce = re.search(r"clawswe-frame-begin ([0-9a-f]+)", argv[2]).group(1)
    return f"clawswe-frame-begin {nonce}\n{output}clawswe-frame-end {nonce}\n"


class _Answers:
    def __init__(self, output: str, exit_code: int = 0):
        self.output, self.exit_code = output, exit_code

    def exec(self, argv, **kwargs):
        return ExecResult(self.exit_code, framed(argv, self.output), 0.01)


def _output(commits=(BASE,), head=BASE) -> str:
    return "\n".join([BASE, "--- ancestry", BASE, "--- objects", *(f"commit {c}" for c in commits),
                      "--- refs", "--- head", head, "--- end", ""])


def test_a_clean_store_passes():
    prep.check_purged(_Answers(_output()), BASE)


def test_a_future_commit_is_named():
    with pytest.raises(InfraError, match="not in the history"):
        prep.check_purged(_Answers(_output(commits=(BASE, "b" * 40))), BASE)


@pytest.mark.parametrize("output", ["", "\n\n", BASE + "\n--- ancestry\n" + BASE + "\n"])
def test_output_cut_short_is_a_retryable_infrastructure_error_not_a_crash(output):
    # seen under load: the check exited 0 with no output, and the item died of an IndexError
    class Unframed(_Answers):
        def exec(self, argv, **kwargs):
            return ExecResult(0, output, 0.01)

    for ws in (_Answers(output), Unframed(output)):  # whole but short (never from the script), or cut
        with pytest.raises(InfraError, match="purge check") as info:
            prep.check_purged(ws, BASE)
        assert info.value.retryable


def test_a_warning_in_the_answer_is_not_an_object():
    output = _output().replace("--- objects\n", "--- objects\nwarning: ignoring broken ref refs/x\n")
    prep.check_purged(_Answers(output), BASE)


class _CutOnce:
    """The engine's stream cut short once (seen in CI under load: 250 bytes, exit 0), then whole."""

    def __init__(self, whole: str):
        self.whole = whole
        self.calls = 0

    def exec(self, argv, **kwargs):
        self.calls += 1
        answer = framed(argv, self.whole)
        return ExecResult(0, answer[:len(answer) // 2] if self.calls == 1 else answer, 0.01)


def test_an_answer_cut_once_is_read_again_not_retried_from_scratch():
    """The check only reads: a second reading answers, and the item goes on (it was retried whole before)."""
    ws = _CutOnce(_output(commits=(BASE, *("c" * 39 + str(i) for i in range(8)))))
    with pytest.raises(InfraError, match="not in the history"):  # the whole answer, read: its verdict stands
        prep.check_purged(ws, BASE)
    assert ws.calls == 2
    ws = _CutOnce(_output())
    prep.check_purged(ws, BASE)
    assert ws.calls == 2
