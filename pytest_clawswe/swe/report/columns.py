"""What a report is made of: runs read back from disk, and the columns (harness × model) they form.

A column's numbers are always recomputed from the per-instance results of its run, never copied from
summary.json, so that a table cell is exactly the sum of the instances behind it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from pytest_clawswe.errors import UserError
from pytest_clawswe.files import load_run_info
from pytest_clawswe.prices import PriceBook
from pytest_clawswe.report.format import config_label
from pytest_clawswe.swe.paths import PUBLISHED_RESULTS
from pytest_clawswe.swe.results.run_dir import RESOLVED, InstanceResult, load_results
from pytest_clawswe.swe.results.summary import summarize


@dataclass
class Run:
    path: Path
    info: dict
    results: list[InstanceResult]

    @property
    def harness(self) -> str:
        return self.info.get("harness") or (self.results[0].harness if self.results else "?")

    @property
    def model(self) -> str:
        return self.info.get("model") or (self.results[0].model if self.results else "?")

    @property
    def run_id(self) -> str:
        return self.info.get("run_id") or (self.results[0].run_id if self.results else "") or self.path.name

    @property
    def resolved_by_instance(self) -> dict[str, bool]:
        return {r.instance_id: r.outcome == RESOLVED for r in self.results}


class PublishedCost(float):
    """A published cost that prints with the decimals the paper gives ($85.84 from its prose, $1,399.1 from
    its table), never padded or rounded to another precision."""

    decimals: int

    def __new__(cls, value: float, decimals: int):
        obj = super().__new__(cls, value)
        obj.decimals = decimals
        return obj


@dataclass
class Column:
    """One row of the main table: a harness × model configuration (one run of it, for runs)."""

    harness: str
    model: str
    instances: int
    resolved: int
    cost_usd: float | None
    provider_cost_usd: float | None = None  # what the provider billed itself (OpenRouter), beside ours
    input_tokens: int | None = None
    output_tokens: int | None = None
    mean_duration_s: float | None = None
    mean_turns: float | None = None
    cache_hit_rate: float | None = None
    apply_failed: int | None = None
    errors: int | None = None
    per_language: dict[str, tuple[int, int]] = field(default_factory=dict)  # language -> (resolved, n)
    # a run with --health: resolved and instances among the healthy ones only (report/health.py); None without
    healthy: tuple[int, int] | None = None
    note: str = ""  # a footnote marker's meaning, e.g. "post-paper"
    run: Run | None = None
    run_label: str = ""  # set when one configuration has several runs

    @property
    def key(self) -> tuple[str, str]:
        return self.harness, self.model

    @property
    def pass_at_1(self) -> float | None:
        return self.resolved / self.instances if self.instances else None

    @property
    def label(self) -> str:
        text = config_label(self.harness, self.model)
        return f"{text} ({self.run_label})" if self.run_label else text


class NoRunsError(UserError):
    """Raised with a sentence saying what to do; the CLI turns it into a UserError."""


def _is_run(path: Path) -> bool:
    return (path / "instances").is_dir() or (path / "run.json").is_file()


def find_run_dirs(paths: list[str | Path]) -> list[Path]:
    """Run directories named, or directly inside a named directory (a folder of runs, or of repeats)."""
    found = []
    for raw in paths:
        path = Path(raw)
        if not path.is_dir():
            raise NoRunsError(f"{path} is not a directory; give the run directory of a benchmark run")
        if _is_run(path):
            found.append(path)
            continue
        inner = sorted(p for p in path.iterdir() if p.is_dir() and _is_run(p))
        if not inner:
            raise NoRunsError(f"{path} holds no benchmark run (no instances/ folder); give a run directory")
        found.extend(inner)
    return list(dict.fromkeys(p.resolve() for p in found))


def load_runs(paths: list[str | Path], prices: PriceBook | None = None) -> list[Run]:
    """Read runs; with `prices`, every instance is priced again from its gateway usage."""
    runs = []
    for path in find_run_dirs(paths):
        results = load_results(path)
        if not results:
            raise NoRunsError(f"{path} has no finished instance yet (no instances/*/metadata.json); run it first")
        info = load_run_info(path)
        run = Run(path, info, results)
        if prices is not None:
            for r in results:
                r.cost_usd = prices.cost_usd(r.usage, r.model or run.model)
        runs.append(run)
    return runs


def column_from_run(run: Run) -> Column:
    s = summarize(run.results, run.info)
    return Column(
        harness=run.harness,
        model=run.model,
        instances=s["instances"],
        resolved=s["resolved"],
        cost_usd=s["cost_usd"],
        provider_cost_usd=s["provider_cost_usd"],
        input_tokens=s["input_tokens"],
        output_tokens=s["output_tokens"],
        mean_duration_s=s["mean_duration_s"],
        mean_turns=s["mean_turns"],
        cache_hit_rate=s["cache_hit_rate"],
        apply_failed=s["apply_failed"],
        errors=s["errors"],
        per_language={lang: (v["resolved"], v["instances"]) for lang, v in s["per_language"].items()},
        note=protocol_note(run.info),
        run=run,
        healthy=(s["health"]["resolved_healthy"], s["health"]["healthy_instances"]) if s.get("health") else None,
    )


def protocol_note(info: dict) -> str:
    """How a run left the paper's protocol (run.json): the --no-purge ablation, --retries, harness options a
    user set. "" when it ran as the paper did."""
    parts = []
    if info.get("purge") is False:
        parts.append("ABLATION --no-purge: future commits kept, not comparable with the paper")
    if info.get("retries"):
        parts.append(f"--retries {info['retries']} (the paper: one attempt)")
    if info.get("harness_options"):
        parts.append("harness options " + ", ".join(f"{k}={v}" for k, v in sorted(info["harness_options"].items())))
    if info.get("regrade"):  # `clawswe regrade`: the run's patches evaluated again
        from pytest_clawswe.run.regrade import note

        parts.append(note(info))
    return "; ".join(parts)


def columns_from_runs(runs: list[Run]) -> list[Column]:
    from pytest_clawswe.run.regrade import REGRADE_LABEL, beside_its_run

    columns = [column_from_run(run) for run in runs]
    run_ids = {run.run_id for run in runs}
    for c in columns:  # a regrade beside the run it grades again is its own configuration, not a repeat of it
        if beside_its_run(c.run.info, run_ids):
            c.harness += REGRADE_LABEL
    for c in columns:
        c.run_label = repeat_label(c.run, runs)
    return columns


def repeat_label(run: Run, runs: list[Run]) -> str:
    """Tells repeats of one configuration apart: the run id, or the folder name if the ids agree;
    empty for a configuration that ran once."""
    twins = [r for r in runs if (r.harness, r.model) == (run.harness, run.model)]
    if len(twins) < 2:
        return ""
    return run.run_id if len({r.run_id for r in twins}) == len(twins) else run.path.name


def group_repeats(columns: list[Column]) -> dict[tuple[str, str], list[Column]]:
    groups: dict[tuple[str, str], list[Column]] = {}
    for c in columns:
        groups.setdefault(c.key, []).append(c)
    return groups


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the non-dominated (cost, score) points: nothing else is as cheap and as good, and
    strictly better in one. Sorted by cost."""
    front = [
        i
        for i, (cost, score) in enumerate(points)
        if not any(c <= cost and s >= score and (c, s) != (cost, score) for c, s in points)
    ]
    return sorted(front, key=lambda i: points[i])


@cache
def _paper_language_order() -> tuple[str, ...]:
    data = json.loads(PUBLISHED_RESULTS.read_text())
    return tuple(data["table2_openclaw_x_models"][0]["per_language_pass_at_1"])


def language_order(languages) -> list[str]:
    """The paper's order of language groups, then any others alphabetically."""
    paper = [lang for lang in _paper_language_order() if lang in languages]
    return paper + sorted(set(languages) - set(paper))
