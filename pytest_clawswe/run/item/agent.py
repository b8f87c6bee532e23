"""The agent life cycle, the same for every benchmark: create, send the prompt under the disk watch, stop every
process the agent started, back up its session, delete it.

What the agent does to its own container is its result (graded), never an error: a disk limit it passes ends the
attempt as "disk_limit"; a container it stopped (it killed the keep-alive) is left as it is for the benchmark to
read through the engine, and the adapter's delete step, which needs a running container, is skipped.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from pytest_clawswe.engine.sandbox.docker_workspace import DiskWatch
from pytest_clawswe.harness.adapter import AgentContext, AgentRun, Harness


def run_agent(harness: Harness, ctx: AgentContext, prompt: str, disk_limit: int | None, *,
              since: float | None = None, after_create: Callable[[], None] | None = None) -> AgentRun:
    """One attempt of the agent on `prompt` in ctx.workspace. `since` (time.monotonic()): when the item's agent
    phase began, for a retry within the item's budget (what is left once the agent exists; the attempt's own
    AgentContext copy holds it); `after_create` runs between create and send (a benchmark's last change to the
    container, e.g. closing the network)."""
    return run_attempt(harness, ctx, prompt, disk_limit, since=since, after_create=after_create)[0]


def run_attempt(harness: Harness, ctx: AgentContext, prompt: str, disk_limit: int | None, *,
                since: float | None = None,
                after_create: Callable[[], None] | None = None) -> tuple[AgentRun, AgentContext]:
    """run_agent, and the context the harness ran with (its deadline says the attempt's budget)."""
    harness.create_agent(ctx)
    if after_create is not None:
        after_create()
    if since is not None:  # a retry: the item's deadline stays as made; this attempt's copy says what is left
        ctx = replace(ctx, deadline=ctx.deadline.for_retry(since))
    run = None
    try:
        with DiskWatch(ctx.workspace, disk_limit) as disk:
            run = harness.send_task(ctx, prompt)
        if disk.tripped_at:  # the agent's doing, like a timeout: graded as it stands, not retried
            run = AgentRun("disk_limit", run.output, run.exit_code, run.harness_usage,
                           message=f"stopped: the agent's container wrote {disk.tripped_at / 2**30:.1f} GiB, "
                                   f"over the disk limit of {disk_limit / 2**30:.1f} GiB")
    finally:
        # whatever the finish reason, nothing the agent started may run on (in the background too): it would
        # change what is graded, or the retry's fresh start
        ctx.workspace.kill_all()
        try:
            harness.backup_session(ctx, ctx.artifacts_dir / "session")
        finally:
            if ctx.workspace.running():
                harness.delete_agent(ctx)
    return run, ctx
