"""`bare`: the paper's diagnostic. OpenClaw with no tools at all is asked for the fix as a unified diff in
its final answer; the adapter applies that diff to /testbed, and the usual patch contract follows (the patch
is then collected from the repository, like for every harness).

Same per-instance agent as `openclaw`, with tools.deny ["*"] (the requests carry no tools). The diff is
taken from the answer's ```diff / ```patch blocks (all of them, in order; else from the first `diff --git`
or `--- ` line on), checked with `git apply --check`, else `patch --dry-run` (fuzz 3), and applied only
when a check passes, so a failed diff leaves /testbed untouched. harness_usage carries `diff_found`,
`diff_applied` and `diff_apply_failures` (0 or 1: summary.json's harness_usage totals count a run's apply
failures; the paper saw 69.1% of bare patches fail to apply) and, when it failed, `diff_error`; the finish reason stays "stop", and the patch contract then sees an empty
patch. The answer and the extracted diff are kept in the session backup.
"""
from __future__ import annotations

import re

from pytest_clawswe.harness.adapter import AgentContext, AgentRun
from pytest_clawswe.harness.adapters.openclaw import OpenClawHarness, failure, final_text, harness_usage

ANSWER_DIFF = "answer.diff"
APPLY_LOG = "apply.log"

# Replaces the default template's tool instructions; kept here until prompts/bare.txt exists as data.
_FENCE_OPEN = re.compile(r"^\s*```+\s*(diff|patch|udiff)?\s*$", re.IGNORECASE)
_FENCE_CLOSE = re.compile(r"^\s*```+\s*$")


def extract_diff(text: str) -> str:
    """The unified diff in an answer: the contents of its diff fences, else the text from the first diff header."""
    lines = text.splitlines(keepends=True)
    blocks, current, tagged = [], None, False
    for line in lines:
        if current is None:
            m = _FENCE_OPEN.match(line)
            if m:
                current, tagged = [], bool(m.group(1))
        elif _FENCE_CLOSE.match(line):  # a diff's own lines start with ' ', '+', '-', '\\' or '@': never ```
            body = "".join(current)
            if tagged or re.search(r"^(diff --git |--- )", body, re.MULTILINE):
                blocks.append(body)
            current = None
        else:
            current.append(line)
    if current is not None and tagged:  # an unclosed fence at the end of the answer
        blocks.append("".join(current))
    if not blocks:
        m = re.search(r"^(diff --git |--- \S)", text, re.MULTILINE)
        if m:
            blocks.append(text[m.start():])
    diff = "".join(b if b.endswith("\n") else b + "\n" for b in blocks)
    return diff if re.search(r"^@@ ", diff, re.MULTILINE) else ""


# git apply when it checks clean, else GNU patch when a dry run passes; nothing is touched otherwise
_APPLY = """
f=$1
if git apply --check --whitespace=nowarn "$f" 2>&1; then git apply --whitespace=nowarn "$f" && echo APPLIED-BY-git-apply && exit 0; fi
if patch -p1 --batch --forward --fuzz=3 --dry-run < "$f"; then
  patch -p1 --batch --forward --fuzz=3 --no-backup-if-mismatch < "$f" && echo APPLIED-BY-patch && exit 0
fi
exit 1
"""


class BareHarness(OpenClawHarness):
    name = "bare"
    prompt_template = "bare.txt"  # asks for the fix as a unified diff in the answer
    tool_deny = ("*",)

    def send_task(self, ctx: AgentContext, prompt: str) -> AgentRun:
        result, stdout, stderr, data = self.run_openclaw(ctx, prompt)
        usage = harness_usage(data)
        run = self.finish(result, stdout, stderr, usage, failure(data), name="openclaw", ctx=ctx)
        if run.finish_reason != "stop":
            return run  # a timeout or an error: no answer to apply (an error is retried only under --retries)
        answer = final_text(data)
        diff = extract_diff(answer)
        usage["diff_found"] = bool(diff)
        ws = ctx.workspace
        ws.write_file(f"{self.agent_home}/answer.txt", answer)
        if not diff:
            usage["diff_applied"], usage["diff_apply_failures"] = False, 1
            usage["diff_error"] = "the final answer held no unified diff"
            run.message = usage["diff_error"]
            return run
        path = f"{self.agent_home}/{ANSWER_DIFF}"
        ws.write_file(path, diff)
        applied = ws.exec(["sh", "-c", _APPLY, "sh", path], workdir=ctx.workdir, timeout=120)
        ws.write_file(f"{self.agent_home}/{APPLY_LOG}", applied.output)
        usage["diff_applied"] = applied.exit_code == 0
        usage["diff_apply_failures"] = int(not usage["diff_applied"])  # a number: the run's summary sums it
        if applied.exit_code == 0:
            usage["apply_method"] = "git apply" if "APPLIED-BY-git-apply" in applied.stdout else "patch"
        else:
            usage["diff_error"] = "the diff in the final answer did not apply to /testbed"
            run.message = usage["diff_error"]
        run.output += f"--- diff from the answer: {'applied' if usage['diff_applied'] else 'NOT applied'} ---\n"
        run.output += applied.output
        return run
