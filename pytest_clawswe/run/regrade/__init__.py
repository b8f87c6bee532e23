"""Grading a finished run again, without an agent: `pytest --regrade RUN` (what `clawswe regrade RUN` runs).

A regrade is a run of its own in a new folder; RUN is only read. Its items are RUN's items whose grading inputs
RUN kept, each graded again by its benchmark (Benchmark.regrade_*: WildClawBench runs the task's grade() on the kept
snapshot, world, transcript and audit, its judge through this run's gateway; Claw-SWE-Bench runs the SWE-bench
evaluation of the kept patch). Everything else of a run comes with it: -k and -m, -n, --resume, JUnit, errors that
stay errors, the run's files and reports. What made the agents' work (harness, model, budget, limits, network, ...)
is RUN's, read from its run.json: a regrade takes only the options that change grading (the benchmark's
`regrade_options`) and the core's own below (where the new run goes, prices, engines and images).
"""
from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_clawswe.files import load_run_info
from pytest_clawswe.run.benchmark import REGRADE_KEY as KEY
from pytest_clawswe.run.benchmark import benchmark_of, given_by_owner
from pytest_clawswe.run.config import RunConfig, prices_digest, run_location
from pytest_clawswe.run.options import image_cache_option, registry_option

# the core's options a regrade reads (every other option of a run describes the agents' work: RUN's)
# (--network: the graders' network, e.g. locked where the run's internet needs root; run.json keeps the agents')
READS = ("regrade", "run_dir", "run_id", "resume", "prices", "no_model_check", "docker_host", "docker_tls_dir",
         "registry", "cache_level", "image_cache", "benchmark", "dataset", "provider_breaker", "no_build_bundles",
         "network")
# run.json keys of RUN a regrade does not take over: its own identity and history
NOT_INHERITED = ("run_id", "started_at", "invocations", "regrade", "cache_level", "image_cache", "registry",
                 "prices_sha256", "harness_settings")


@dataclass(frozen=True)
class Source:
    """The run a regrade grades again."""

    path: Path  # its folder, resolved
    info: dict  # its run.json
    benchmark: str  # its benchmark's name

    @property
    def run_id(self) -> str:
        return str(self.info.get("run_id") or self.path.name)


def source(config: pytest.Config) -> Source | None:
    """The run --regrade names, checked once (pytest.UsageError, one sentence); None without --regrade."""
    given = config.getoption("regrade", None)
    if not given:
        return None
    found = config.stash.get(KEY, None)
    if found is not None:
        return found
    path = Path(config.invocation_params.dir, given).resolve()
    if not path.is_dir():
        raise pytest.UsageError(f"--regrade {given}: no such folder; give the folder of a finished run")
    try:
        info = load_run_info(path)
    except (OSError, ValueError) as exc:
        raise pytest.UsageError(f"--regrade {path}: its run.json cannot be read ({exc}); give the folder of a "
                                "finished run") from None
    if not info:
        raise pytest.UsageError(f"--regrade {path}: not a run folder (no run.json); give the folder of a finished run")
    kind = benchmark_of(info)
    if kind is None:
        raise pytest.UsageError(f"--regrade {path}: a run of benchmark {info.get('benchmark')!r}, which is not "
                                "installed here")
    if not kind.can_regrade:
        raise pytest.UsageError(f"--regrade {path}: {kind.title} runs cannot be graded again (the benchmark has no "
                                "regrade)")
    if not kind.item_folders(path):
        raise pytest.UsageError(f"--regrade {path}: no item of the run has ended (no result file); finish it first "
                                f"(pytest --resume {path}), then grade it again")
    found = Source(path, info, kind.name)
    config.stash[KEY] = found
    return found


def adopt(config: pytest.Config, src: Source) -> None:
    """RUN's benchmark and dataset (unless --dataset points at where it is now) and network into the options; an
    option that describes the agents' work, given, is refused in one sentence."""
    for owner, option in given_by_owner(config):
        if owner == "" and option.dest not in READS:
            flag = option.flag
            raise pytest.UsageError(f"{flag} describes how the agents of {src.path.name} worked: a regrade "
                                    f"(--regrade) grades what they did under that run's own settings; drop {flag}")
    given = config.getoption("benchmark", None)
    if given and given != src.benchmark:
        raise pytest.UsageError(f"--benchmark {given}: {src.path} is a {src.benchmark} run; drop --benchmark")
    config.option.benchmark = src.benchmark
    if config.getoption("dataset", None) is None:
        config.option.dataset = src.info.get("dataset")
    if config.getoption("network", None) is None:
        config.option.network = src.info.get("network")


def check_benchmark_options(config: pytest.Config, benchmark) -> None:
    """The benchmark's own options a regrade does not read (they describe the agents' work), given: refused."""
    for owner, option in given_by_owner(config):
        if owner == benchmark.name and option.dest not in benchmark.regrade_options:
            flag = option.flag
            reads = ", ".join(f"--{d.replace('_', '-')}" for d in benchmark.regrade_options) or "none of its own"
            raise pytest.UsageError(f"{flag} describes how the agents worked, not how they are graded: a regrade of a "
                                    f"{benchmark.title} run reads {reads}; drop {flag}")


def given_settings(config: pytest.Config, src: Source) -> dict:
    """The regrade's settings (RunConfig's fields; run/config.run_config makes it): RUN's settings (harness and
    model as recorded: no adapter is made), the new run's folder and id, and the grading options given."""
    info = src.info
    stamp = f"{time.strftime('%Y%m%d-%H%M%S')}"
    run_id, run_dir = run_location(config, default_id=f"{src.run_id}.regrade-{stamp}")
    if run_dir == src.path or src.path in run_dir.parents or run_dir in src.path.parents:
        raise pytest.UsageError(f"--run-dir {run_dir}: a regrade writes a new run folder, never into or around the run "
                                f"it grades ({src.path}); give another folder")
    return dict(run_id=run_id, run_dir=run_dir, harness_name=str(info.get("harness") or ""),
                    harness_spec=str(info.get("harness") or ""), model=str(info.get("model") or ""),
                    budget_s=float(info.get("budget_s") or 3600.0),
                    mem_limit=info.get("mem_limit"), pids_limit=info.get("pids_limit"),
                    disk_limit=info.get("disk_limit"),
                    harness_options=dict(info.get("harness_options") or {}), prices_file=config.getoption("prices"),
                    prices_sha256=prices_digest(config.getoption("prices")),
                    retries=int(info.get("retries") or 0),
                    cache_level=config.getoption("cache_level"),
                    gateway_shaping=str(info.get("gateway_shaping") or "auto"),
                    image_cache=image_cache_option(config), registry=registry_option(config),
                    grade_provider_failures=bool(info.get("grade_provider_failures")), regrade_of=str(src.path))


def run_info(src: Source, cfg: RunConfig, benchmark) -> dict:
    """The regrade's run.json: RUN's (so reports and `clawswe compare` see the same harness, model, dataset and
    protocol), its own id and folder settings, the grading settings now in force, and what it regrades."""
    info = {k: v for k, v in src.info.items() if k not in NOT_INHERITED}
    info.update({"run_id": cfg.run_id, "prices_sha256": cfg.prices_sha256,
                 "cache_level": cfg.cache_level, "image_cache": cfg.image_cache, "registry": cfg.registry,
                 "harness_settings": src.info.get("harness_settings"), **benchmark.run_info()})
    info["regrade"] = {"of": str(src.path), "run_id": src.run_id, **benchmark.regrade_info()}
    if cfg.network_mode != src.info.get("network", cfg.network_mode):  # the graders' (run.json's stays the agents')
        info["regrade"]["network"] = cfg.network_mode
    return info


def check_resume(config: pytest.Config, cfg: RunConfig, benchmark, src: Source) -> None:
    """A resumed regrade grades the same run with the same grading settings."""
    if not config.getoption("resume"):
        return
    stored = load_run_info(cfg.run_dir)
    before = stored.get("regrade") or {}
    if not before:
        raise pytest.UsageError(f"--resume {cfg.run_dir} is not a regrade; resume it without --regrade")
    if before.get("run_id") != src.run_id:
        raise pytest.UsageError(f"{cfg.run_dir} regrades run {before.get('run_id')}, not {src.run_id}; give that run "
                                "to --regrade, or another folder")
    graders = before.get("network", stored.get("network"))
    if graders and graders != cfg.network_mode:
        raise pytest.UsageError(f"--network is {cfg.network_mode!r} but the regrade in {cfg.run_dir} graded on "
                                f"{graders!r}; resume with --network {graders}")
    for key, now in benchmark.run_info().items():
        if key in benchmark.grading_keys and key in stored and stored[key] != now:
            name = benchmark.run_info_options.get(key, key)
            raise pytest.UsageError(f"{name} is {now!r} but the regrade in {cfg.run_dir} used {stored[key]!r}; resume "
                                    "with its own settings, or regrade into another folder")


def selected(config: pytest.Config, names: set[str], markers: list[str]) -> bool:
    """Whether -k and -m select an item with these keyword names and markers, as pytest decides it (its own
    expressions): a regrade refuses missing inputs before anything is written, for the items it will grade only."""
    from _pytest.mark import KeywordMatcher, MarkMatcher, _parse_expression

    keyword = (config.option.keyword or "").lstrip()
    if keyword and not _parse_expression(keyword, "Wrong expression passed to '-k'").evaluate(
            KeywordMatcher(frozenset({*names, *markers}))):
        return False
    marks = (config.option.markexpr or "").strip()
    if marks:
        matcher = MarkMatcher.from_markers([getattr(pytest.mark, m).mark for m in markers])
        return _parse_expression(marks, "Wrong expression passed to '-m'").evaluate(matcher)
    return True


def copy_item(source: Path, dest: Path, skip: set[str]) -> None:
    """An item folder of RUN into the regrade's partial folder, but for the names in `skip` (what grading writes
    anew). Copies, never links: nothing the regrade writes can reach RUN's files."""
    for entry in sorted(source.iterdir()):
        if entry.name in skip:
            continue
        target = dest / entry.name
        if entry.is_dir() and not entry.is_symlink():
            shutil.copytree(entry, target, symlinks=True)
        else:
            shutil.copy2(entry, target, follow_symlinks=False)


RECORD_DIRS = ("usage", "calls", "conversations")  # the gateway's record of each item (ledger, calls; conversations: runs before 31.1)


def copy_records(source_run: Path, run_dir: Path, ids: list[str]) -> None:
    """The gateway's record of RUN's items `ids` (the agent's model calls) into the regrade's gateway folder, so its
    trajectories, `clawswe export` and the report see the same calls; the regrade's own calls get other names."""
    import re

    for sub in RECORD_DIRS:
        folder = source_run / "gateway" / sub
        if not folder.is_dir():
            continue
        for item_id in ids:
            safe = re.sub(r"[^A-Za-z0-9._-]", "_", item_id) or "_"
            for path in [*folder.glob(f"{safe}.json*"), *folder.glob(f"{safe}@w*.json*")]:
                target = run_dir / "gateway" / sub / path.name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)


def keep_total(result, before: dict) -> None:
    """The item's timings["total"] stays the run's (how long its agent's item took, as reports read it); the regrade's
    own time goes into its `regrade` record (call once the item ended: ItemRunner.before_commit)."""
    total = (before.get("timings") or {}).get("total")
    if total is not None and "total" in result.timings:
        result.regrade["seconds"] = result.timings["total"]
        result.timings["total"] = total


def earlier(result: dict) -> dict:
    """What an item's result says in RUN, for the regraded result's `regrade` record."""
    return {k: result.get(k) for k in ("run_id", "outcome", "error", "started_at") if k in result}


def terminal_line(src: Source, benchmark) -> str:
    return f"regrade of {src.path} (run {src.run_id}): {benchmark.regrade_summary()}"


# -- in reports ------------------------------------------------------------------------------------------------
def note(info: dict) -> str:
    """What a run.json says of a regrade, for a report ("" for a run with agents)."""
    record = info.get("regrade") or {}
    if not record:
        return ""
    how = [f"{k.replace('_', ' ')} {v}" for k, v in record.items() if k not in ("of", "run_id") and v is not None]
    return f"REGRADE of run {record.get('run_id')}" + (f" ({', '.join(how)})" if how else "")


def beside_its_run(info: dict, run_ids: set[str]) -> bool:
    """Whether a run is a regrade of another run in the same report: it is the same agents' work graded again, so it
    is shown as a configuration of its own, never pooled with that run as a repeat."""
    return bool((info.get("regrade") or {}).get("run_id") in run_ids)


REGRADE_LABEL = " (regrade)"  # added to a regrade's harness where it is beside its run (beside_its_run)
