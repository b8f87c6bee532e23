"""Adversarial harnesses for the container seam, loaded by path: --harness tests/container_harnesses.py:Linger."""
import sys
from dataclasses import dataclass
from pathlib import Path

from pytest_clawswe.harness import AgentRun, Harness, HarnessOptions

sys.path.insert(0, str(Path(__file__).parent))  # loaded by path, outside pytest's own import of tests/
from fake_harnesses import LIST_PROCESSES, apply_gold  # noqa: E402

GO = "/tmp/.clawswe-linger-go"
# Detached from the exec (its own session, output to /dev/null), so send_task returns while it lives on; once
# GO exists it adds a new file to the repository every 0.1 s.
WRITER = (f"(setsid sh -c 'while :; do [ -e {GO} ] && echo late > /testbed/late_$(date +%s%N).txt; "
          "sleep 0.1; done' >/dev/null 2>&1 </dev/null &)")


@dataclass
class LingerOptions(HarnessOptions):
    reason: str = "stop"  # the finish reason send_task reports: stop | error | timeout


class Linger(Harness):
    """Applies the gold patch, leaves a writer running in the background and returns
    `--harness-option reason=stop|error|timeout`. Its delete_agent (the runner's last call into the adapter
    before the patch is read) lets the writer write and records which processes are still there."""

    name = "linger"
    needs_model = False

    Options = LingerOptions

    def send_task(self, ctx, prompt):
        ctx.workspace.exec(f"rm -f {GO}")
        apply_gold(ctx)
        ctx.workspace.exec(WRITER, workdir=ctx.workdir, check=True)
        reason = self.options.get("reason", "stop")
        return AgentRun(reason, "left a writer behind", 0 if reason == "stop" else 1, message="on purpose")

    def delete_agent(self, ctx):
        ctx.workspace.exec(f"touch {GO} && sleep 1.5")
        (ctx.artifacts_dir / "processes.txt").write_text(ctx.workspace.exec(["sh", "-c", LIST_PROCESSES]).stdout)
