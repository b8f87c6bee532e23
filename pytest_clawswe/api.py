"""The names a benchmark or a harness of your own imports: `from pytest_clawswe.api import Benchmark, ...`.

These are the supported API. Every other module of the package is free to move or change between releases (as
inspect_ai keeps its public names apart from its private modules); the names here keep their meaning, and a
change to one is said in the README.

A benchmark (docs/architecture.md, "How a third benchmark plugs in"; tests/tinybench is one, run in Docker by
tests/test_third_benchmark.py) is a package with two entry points: its pytest plugin answers the
`pytest_clawswe_benchmark(config)` hook (hookspecs.py) with a Benchmark, and `clawswe.benchmarks` names that class.

    Benchmark            what the run session asks: select, collector, runner, rebuild, terminal_lines, ...
    BenchmarkCollector   the root collector the Benchmark gives pytest; BenchmarkItem one item under it
    ItemRunner           the run-once template (item folder, resume, retries) around the benchmark's run_phases
    ItemResult           what every item's result holds (outcome, error, finish reason, timings, usage, cost)
    RunConfig            the run's checked options, as the runner gets them (`run_session.cfg`); frozen
    Model                `cfg.model`: --model parsed once (spec as written, provider, upstream_name, is_scripted,
                         scripted_mode); files and a harness's own config take `cfg.model.spec`
    Option, add_options  the benchmark's own options as a table of rows (flag, help, where it is read): the
                         Benchmark names it (`declared_options`: another benchmark's run refuses them), its
                         plugin's pytest_addoption adds it (`add_options(parser, "clawswe-NAME", title, TABLE)`)
    run_agent            the agent's life cycle in a workspace: create, send the prompt, stop everything, back up
    Workspace            one item's Docker sandbox (a context manager); BaseWorkspace its interface, ExecResult
                         what an exec returns
    progress             a line for the terminal from any process of the run
    write_atomic         a file written whole or not at all

A harness (README, "Adding a harness") subclasses Harness, with its typed HarnessOptions, and is named in the
`clawswe.harnesses` entry points or given as `--harness path/to/file.py:Class`.

    Harness              the adapter protocol: create_agent, send_task, backup_session, delete_agent, ...
    HarnessOptions       a harness's typed settings (`--harness-option KEY=VALUE`), checked before the run
    AgentContext         what the adapter gets for one item (its workspace, model, deadline, gateway URL and
                         token); `ctx.deadline` (harness/deadline.Deadline, frozen) holds every time limit,
                         `ctx.budget_s` stays a read-only view of the attempt's budget for adapters that read it
    AgentRun             what send_task reports (finish reason, output, exit code, the harness's own usage)
    get_harness_class    a harness class by name, `module:Class` or `path.py:Class`

Errors (errors.py has the whole tree): ClawsweError, and under it UserError (HarnessError), InfraError, ItemError,
Verdict.
"""
from pytest_clawswe.engine.sandbox.docker_workspace import Workspace
from pytest_clawswe.engine.workspace import BaseWorkspace, ExecResult
from pytest_clawswe.errors import ClawsweError, HarnessError, InfraError, ItemError, UserError, Verdict
from pytest_clawswe.files import write_atomic
from pytest_clawswe.harness.adapter import AgentContext, AgentRun, Harness, HarnessOptions, get_harness_class
from pytest_clawswe.model import Model
from pytest_clawswe.run.item.agent import run_agent
from pytest_clawswe.run.benchmark import Benchmark
from pytest_clawswe.run.options import Option, add_options
from pytest_clawswe.run.config import RunConfig
from pytest_clawswe.run.item.nodes import BenchmarkCollector, BenchmarkItem
from pytest_clawswe.run.item.runner import ItemRunner, progress
from pytest_clawswe.run.item.result import ItemResult

__all__ = [
    "AgentContext", "AgentRun", "BaseWorkspace", "Benchmark", "BenchmarkCollector", "BenchmarkItem", "ClawsweError",
    "ExecResult", "Harness", "HarnessError", "HarnessOptions", "InfraError", "ItemError", "ItemResult", "ItemRunner",
    "Model", "Option", "RunConfig", "UserError", "Verdict", "Workspace", "add_options", "get_harness_class", "progress",
    "run_agent", "write_atomic",
]
