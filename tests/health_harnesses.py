"""A harness for the health tests (tests/test_health_docker.py), loaded by path:
--harness tests/health_harnesses.py:GoldButBreaksMeanHarness."""
from pytest_clawswe.harness.adapter import AgentRun, Harness


class GoldButBreaksMeanHarness(Harness):
    """Applies the gold patch, then breaks tally's mean (integer division): a PASS_TO_PASS test that passes at the
    base commit in every run of the health check now fails, and the run's report must say the patch did it."""

    name = "gold-but-breaks-mean"
    needs_model = False

    def send_task(self, ctx, prompt):
        ctx.workspace.write_file("/tmp/gold.patch", ctx.row["patch"])
        result = ctx.workspace.exec(
            "git apply /tmp/gold.patch && rm /tmp/gold.patch && "
            "sed -i 's|return sum(values) / len(values)|return sum(values) // len(values)|' tally/stats.py",
            workdir=ctx.workdir)
        return AgentRun("stop" if result.exit_code == 0 else "error", result.output, result.exit_code)
