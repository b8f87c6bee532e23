"""`nop`: changes nothing. Every instance must come out unresolved: the baseline that proves graders do
not pass an untouched repository."""
from dataclasses import dataclass, field

from pytest_clawswe.harness.adapter import AgentContext, AgentRun, Harness, HarnessOptions

# the one line `run_tests` writes: a new file no test suite reads, so the patch is not empty
MARKER_FILE, MARKER_TEXT = ".clawswe-nop", "clawswe nop: the base commit, unchanged\n"


@dataclass
class NopOptions(HarnessOptions):
    run_tests: bool = field(default=False, metadata={"help": (
        f"write one line to a new file, {MARKER_FILE}, so the patch is not empty and the evaluator runs the "
        "instance's tests on the base commit (an empty patch is graded unresolved without running them); "
        "`clawswe health` does, to learn each test's status at the base commit")})


class NopHarness(Harness):
    name = "nop"
    needs_model = False
    Options = NopOptions

    def send_task(self, ctx: AgentContext, prompt: str) -> AgentRun:
        if self.opts.run_tests:
            ctx.workspace.write_file(f"{ctx.workdir}/{MARKER_FILE}", MARKER_TEXT)
            return AgentRun("stop", f"nop: no change made; wrote {MARKER_FILE} so the tests run\n", 0)
        return AgentRun("stop", "nop: no change made\n", 0)
