"""Harnesses that misbehave on purpose, loaded by path: --harness tests/fake_harnesses.py:HangHarness."""
from pytest_clawswe.harness import AgentRun, Harness

LIST_PROCESSES = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done"


class HangHarness(Harness):
    """Applies the gold patch, then never finishes: forks, detaches a session, and sleeps."""

    name = "hang"
    needs_model = False

    def send_task(self, ctx, prompt):
        ws = ctx.workspace
        ws.write_file("/tmp/gold.patch", ctx.row["patch"])
        ws.exec("git apply /tmp/gold.patch && rm /tmp/gold.patch", workdir=ctx.workdir, check=True)
        result = ws.exec("sleep 1001 & (setsid sleep 1002 &); sleep 1003", timeout=ctx.budget_s)
        return AgentRun("timeout" if result.timed_out else "stop", result.output)

    def backup_session(self, ctx, dest):
        dest.mkdir(parents=True, exist_ok=True)
        (dest / "processes.txt").write_text(ctx.workspace.exec(["sh", "-c", LIST_PROCESSES]).stdout)


class FlakyHarness(Harness):
    """Errors on its first attempt after scribbling in the repository; applies the gold patch on the retry."""

    name = "flaky"
    needs_model = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = 0

    def send_task(self, ctx, prompt):
        self.calls += 1
        ws = ctx.workspace
        if self.calls % 2 == 1:
            ws.exec("echo junk > scribble.txt", workdir=ctx.workdir)
            return AgentRun("error", "crashed", 1, message="simulated crash")
        ws.write_file("/tmp/gold.patch", ctx.row["patch"])
        ws.exec("git apply /tmp/gold.patch", workdir=ctx.workdir, check=True)
        return AgentRun("stop", "ok", 0)


class BinaryHarness(Harness):
    """Writes only a binary file and a lockfile: the cleaned patch is empty."""

    name = "binary"
    needs_model = False

    def send_task(self, ctx, prompt):
        ctx.workspace.exec("printf '\\x00\\x01\\x02' > blob.bin && printf '\\x00\\xff' > data.dat "
                           "&& echo '{}' > package-lock.json", workdir=ctx.workdir)
        return AgentRun("stop", "", 0)


class DeleteTestbedHarness(Harness):
    """Deletes the whole repository."""

    name = "delete-testbed"
    needs_model = False

    def send_task(self, ctx, prompt):
        ctx.workspace.exec("rm -rf /testbed", workdir="/")
        return AgentRun("stop", "", 0)
