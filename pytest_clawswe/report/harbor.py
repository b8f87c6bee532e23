"""`clawswe export harbor RUN... OUT`: runs of either benchmark as Harbor jobs, the layout `harbor view` reads
(docs/trajectories.md, "Harbor jobs"). One job per run, OUT/<run folder name>/:

    config.json   a JobConfig: the harness as the agent, its model and settings, the dataset
    clawswe.json  the run's run.json (what Harbor's fields cannot hold); it marks the folder as ours to replace
    result.json   a JobResult: trials, errors, retries, tokens, cost, the mean reward per agent and dataset
    <item id>__attempt-<n>/       one trial per item and attempt the gateway saw (earlier, retried ones too)
        config.json  result.json  (a TrialConfig, a TrialResult: rewards, timing, tokens and cost, the agent,
                                   the error as exception info)
        agent/trajectory.json     the attempt's ATIF trajectory, built from the gateway's record
        agent/agent.log           the harness's output
        verifier/reward.json  ctrf.json (the tests)  reward-details.json (the criteria)  test-stdout.txt

Built from the run folder alone and deterministically (ids are UUID5 of names, times are the run's own), so the
same runs give the same files; every text is scrubbed of provider keys and gateway tokens; every input is checked
before anything is written, and each job is written beside its old copy and swapped in."""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from pytest_clawswe.errors import UserError
from pytest_clawswe.report import harbor_trial as trial

JOB_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
MARK = "clawswe.json"  # beside a job's config.json: the run it was exported from (the whole run.json)


class Scrubber:
    """Provider keys (those this machine's environment holds, in every form the gateway's redaction knows) and
    gateway tokens (their shape: the gateway keeps none on disk) out of every text the export writes."""

    def __init__(self) -> None:
        from pytest_clawswe.gateway.service.tokens import TOKEN_PREFIX
        from pytest_clawswe.gateway.upstream.providers import builtin_upstreams
        from pytest_clawswe.gateway.upstream.redact import for_key

        self.redactors = [for_key(key) for key in sorted({up.key() for up in builtin_upstreams()}) if key]
        # a token is the prefix and 32 URL-safe base64 characters (secrets.token_urlsafe(24))
        self.token = re.compile(r"(?<![A-Za-z0-9_-])" + re.escape(TOKEN_PREFIX) + r"[A-Za-z0-9_-]{32}(?![A-Za-z0-9_-])")

    def __call__(self, text: str) -> str:
        if self.redactors:
            data = text.encode("utf-8", errors="surrogateescape")
            for redactor in self.redactors:
                data = redactor.scrub(data)
            text = data.decode("utf-8", errors="replace")
        return self.token.sub("[redacted]", text)


def _dump(doc) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def check_runs(runs: list[Path], out: Path) -> list[tuple[Path, type, dict]]:
    """(run folder, its Benchmark class, its run.json) of every run, or a UserError (one sentence) before anything
    is written: not a run folder, no installed benchmark, two runs of one name, a job folder that is not ours."""
    from pytest_clawswe.files import load_run_info
    from pytest_clawswe.run.benchmark import benchmark_of

    _check_out(out)
    checked: list[tuple[Path, type, dict]] = []
    names: dict[str, Path] = {}
    for run_dir in runs:
        if not (run_dir / "run.json").is_file():
            raise UserError(f"{run_dir} is not a run folder (it has no run.json): give run folders (reports/<run id>)")
        try:
            info = load_run_info(run_dir)
        except ValueError:
            raise UserError(f"{run_dir}/run.json is not JSON: give a run folder a run wrote") from None
        benchmark = benchmark_of(info)
        if benchmark is None:
            raise UserError(f"{run_dir}/run.json names no installed benchmark; give a run folder a run wrote")
        name = run_dir.resolve().name
        if not JOB_NAME.match(name):
            raise UserError(f"{run_dir}: its folder name {name!r} cannot be a job name; rename or copy the run folder")
        if name in names:
            raise UserError(f"{names[name]} and {run_dir} would both be job {name!r}: export them into different "
                            f"folders, or rename one")
        names[name] = run_dir
        job = out / name
        if job.exists() and not _is_our_job(job, name):
            raise UserError(f"{job} exists and is not a job this command wrote; give another OUT or move it away")
        checked.append((run_dir, benchmark, info))
    return checked


def _check_out(out: Path) -> None:
    """OUT is a folder, or can be made: its nearest existing ancestor is a folder we may write in."""
    if out.exists() and not out.is_dir():
        raise UserError(f"{out} is a file: give a folder to write the jobs into (it is made if missing)")
    nearest = next(p for p in (out, *out.resolve().parents) if p.exists())
    if not nearest.is_dir() or not os.access(nearest, os.W_OK | os.X_OK):
        raise UserError(f"cannot write in {nearest}: give an OUT folder you may write in")


def _is_our_job(job: Path, name: str) -> bool:
    try:
        mark = json.loads((job / MARK).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(mark, dict) and mark.get("job_name") == name


def export(runs: list[Path], out: Path, prices_file: str | None = None) -> list[Path]:
    """Write one Harbor job per run into `out`; returns the job folders."""
    from pytest_clawswe.prices import PriceBook

    prices = PriceBook.from_file(prices_file)  # a bad price file is a UserError here, before anything is written
    checked = check_runs([Path(r) for r in runs], Path(out))
    scrub = Scrubber()
    jobs = []
    for run_dir, benchmark, info in checked:
        try:
            jobs.append(_write_job(run_dir, benchmark, info, Path(out), prices, scrub))
        except OSError as exc:  # a full disk, say: the job's earlier copy stays as it was
            where = f": {exc.filename}" if exc.filename else ""
            raise UserError(f"cannot export {run_dir} into {out} ({exc.strerror or exc}{where}); free space or fix "
                            f"permissions, then export again") from None
    return jobs


def _write_job(run_dir: Path, benchmark, info: dict, out: Path, prices, scrub: Scrubber) -> Path:
    name = run_dir.resolve().name
    job_dir = out / name
    partial = out / f".{name}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        results, retried = [], 0
        for item in benchmark.item_folders(run_dir):  # one item at a time: a long run's trajectories are large
            for made in _item_trials(run_dir, benchmark, info, item, job_dir, prices):
                for rel, text in made["files"].items():
                    path = partial / made["name"] / rel
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(scrub(text), encoding="utf-8")
                results.append(made["result"])
                retried += not made["last"]
        (partial / "config.json").write_text(scrub(_dump(job_config(name, benchmark, info, out))))
        (partial / MARK).write_text(scrub(_dump({"job_name": name, "benchmark": benchmark.name, "run": info})))
        (partial / "result.json").write_text(scrub(_dump(job_result(name, info, results, retried))))
        old = out / f".{name}.old"
        shutil.rmtree(old, ignore_errors=True)
        if job_dir.exists():
            job_dir.rename(old)
        partial.rename(job_dir)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return job_dir


def source_of(benchmark, info: dict) -> str:
    """The trials' dataset name: the benchmark's title, and the dataset when it is not the benchmark's own."""
    def slug(text: str) -> str:
        return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")

    title, dataset = slug(str(benchmark.title)), slug(Path(str(info.get("dataset") or "")).name)
    return title if dataset in ("", title) else f"{title}-{dataset}"


def _agent_config(info: dict) -> dict:
    settings = info.get("harness_settings") if isinstance(info.get("harness_settings"), dict) else {}
    return {"name": str(info.get("harness") or ""), "model_name": str(info.get("model") or "") or None,
            "kwargs": {k: v for k, v in sorted(settings.items()) if v is not None}}


def job_config(name: str, benchmark, info: dict, out: Path) -> dict:
    """A JobConfig: what was run, as far as Harbor's fields say it (the whole run.json is in clawswe.json)."""
    return {"schema_version": 1, "job_name": name, "jobs_dir": str(out.resolve()), "n_attempts": 1,
            "environment": {"type": "docker"}, "agents": [_agent_config(info)],
            "datasets": [{"name": source_of(benchmark, info)}]}


def _item_trials(run_dir: Path, benchmark, info: dict, item, job_dir: Path, prices) -> list[dict]:
    """Every attempt of one item as a trial: {"name", "result" (its TrialResult), "files" (path -> text)}."""
    from pytest_clawswe.gateway.record.ledger import read_records
    from pytest_clawswe.trajectory.store import build_for_item

    item_id, folder, result = item
    outcome = benchmark.trajectory_outcome(folder, result)
    docs = dict(build_for_item(run_dir, benchmark.name, item_id, result, outcome, prices=prices, timeout=0))
    records = read_records(run_dir / "gateway", item_id) if (run_dir / "gateway").is_dir() else []
    attempts = sorted(docs) or [1]
    source = source_of(benchmark, info)
    trials = []
    for attempt in attempts:
        last = attempt == attempts[-1]
        name = f"{item_id}__attempt-{attempt}"
        mine = [r for r in records if int(r.get("attempt") or 1) == attempt]
        timing = (trial.item_timing(result, benchmark.timing_phases) if last else None) or trial.ledger_timing(mine)
        timing = timing or trial.Timing()
        agent = _agent_config(info)
        config = {"schema_version": 1, "task": {"path": item_id, "source": source}, "trial_name": name,
                  "trials_dir": str(job_dir.resolve()), "agent": agent,
                  "environment": {"type": "docker"}, "job_id": trial.stable_id("job", job_dir.name)}
        rewards = benchmark.rewards(folder, result) if last else None
        doc = docs.get(attempt)
        trial_result = {
            "schema_version": 1, "id": trial.stable_id("trial", job_dir.name, name), "task_name": item_id,
            "trial_name": name, "trial_uri": (job_dir / name).resolve().as_uri(), "task_id": {"path": item_id},
            "source": source, "task_checksum": trial.task_checksum(folder, benchmark.name, item_id),
            "config": config,
            "agent_info": {"name": agent["name"], "version": str(agent["kwargs"].get("version") or "unknown"),
                           "model_info": trial.model_info(str(info.get("model") or ""))},
            "agent_result": trial.agent_context(doc, result, last),
            "verifier_result": {"rewards": rewards} if rewards is not None else None,
            "exception_info": trial.exception_info(result, last, _ended(timing, result, last)),
            **timing.to_json()}
        files = {"config.json": _dump(config), "result.json": _dump(trial_result),
                 "lock.json": _dump(trial.trial_lock(item_id, source, str(trial_result["task_checksum"]), agent,
                                                     info.get("budget_factor"))),
                 "trial.log": trial.trial_log(timing, trial_result["exception_info"], rewards)}
        if doc is not None:
            files["agent/trajectory.json"] = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
        if last:
            files.update(_item_files(benchmark, folder, outcome, rewards, timing))
        trials.append({"name": name, "result": trial_result, "files": files, "last": last})
    return trials


def _ended(timing, result: dict, last: bool):
    """When the attempt's exception happened: the agent's end for a finish reason, the attempt's end otherwise."""
    agent = timing.phases.get("agent_execution")
    if last and result.get("outcome") != "error" and agent is not None:
        return agent[1]
    return timing.finished_at


def _item_files(benchmark, folder: Path, outcome: dict, rewards: dict | None, timing) -> dict[str, str]:
    """The harness's output and the verifier's files of the item's last attempt."""
    files = {}
    for rel, target in ((benchmark.agent_log, "agent/agent.log"), (benchmark.verifier_log, "verifier/test-stdout.txt")):
        path = folder / rel if rel else None
        if path is not None and path.is_file():
            files[target] = path.read_text(errors="replace")
    if rewards is not None:
        files["verifier/reward.json"] = _dump(rewards)
    if outcome.get("tests"):
        files["verifier/ctrf.json"] = _dump(trial.ctrf(outcome["tests"], benchmark.title,
                                                       timing.phases.get("verifier")))
    if outcome.get("criteria") and outcome.get("score") is not None:
        files["verifier/reward-details.json"] = _dump(trial.reward_details(outcome["score"], outcome["criteria"]))
    return files


def job_result(name: str, info: dict, results: list[dict], retried: int) -> dict:
    """A JobResult with the statistics Harbor keeps (JobStats: per agent, model and dataset the trials with a
    reward, their rewards' values, the errors by kind, the mean reward), summed from the trials as Harbor does."""
    from pytest_clawswe.report.harbor_stats import job_stats

    starts = [t["started_at"] for t in results if t.get("started_at")]
    ends = [t["finished_at"] for t in results if t.get("finished_at")]
    run_start = trial.parse_time(info.get("started_at"))
    started = trial.iso(run_start) if run_start else (min(starts) if starts else "1970-01-01T00:00:00.000+00:00")
    return {"schema_version": 1, "id": trial.stable_id("job", name), "started_at": started, "updated_at": None,
            "finished_at": max(ends) if ends else None, "n_total_trials": len(results),
            "stats": job_stats(results, retried)}


def _cli(args) -> int:
    from pytest_clawswe.report.cli import find_runs
    from pytest_clawswe.run.benchmark import benchmark_classes

    *given, out = args.paths
    if not given:
        raise UserError("give one run folder or more, then the folder to write the jobs into (OUT)")
    runs = find_runs(given, benchmark_classes())  # a folder of runs (a grid's, reports/) gives each of them
    jobs = export(runs, Path(out), args.prices)
    trials = sum(1 for job in jobs for p in job.iterdir() if p.is_dir())
    print(f"{len(jobs)} Harbor job(s), {trials} trial(s), written to {out} (harbor view {out})")
    return 0


def add_cli(formats) -> None:
    harbor = formats.add_parser("harbor", help="runs as Harbor jobs (harbor view), one trial per item and attempt")
    harbor.add_argument("paths", nargs="+", metavar="RUN... OUT",
                        help="run folders (reports/<run id>), either benchmark, or folders of runs (a grid's), then "
                             "the folder to write the jobs in")
    harbor.add_argument("--prices", metavar="FILE", help="the runs' --prices file, for cost")
    harbor.set_defaults(func=_cli)
