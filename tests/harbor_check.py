"""Run by Harbor's own interpreter (tests/harbor_venv.py): load every file of an export with Harbor's models and its
viewer's own scanner, and print what they read, as JSON, for the test to compare.

    python harbor_check.py OUT

Harbor's models ignore fields they do not know, so a misspelt field would pass unseen: every field of every file must
also be one the model kept (its dump holds it), or the check fails naming it."""
import json
import sys
from pathlib import Path

from harbor.models.job.config import JobConfig
from harbor.models.job.lock import TrialLock
from harbor.models.job.result import JobResult
from harbor.models.trajectories import Trajectory
from harbor.models.trial.config import TrialConfig
from harbor.models.trial.result import TrialResult
from harbor.viewer.scanner import JobScanner


def unknown(data, kept, where: str) -> list[str]:
    """Keys of `data` that the model's dump (`kept`) does not have, at any depth."""
    if isinstance(data, dict) and isinstance(kept, dict):
        out = []
        for key, value in data.items():
            if key not in kept:
                out.append(f"{where}.{key}")
            else:
                out += unknown(value, kept[key], f"{where}.{key}")
        return out
    if isinstance(data, list) and isinstance(kept, list) and len(data) == len(kept):
        return [u for i, (d, k) in enumerate(zip(data, kept)) for u in unknown(d, k, f"{where}[{i}]")]
    return []


def load(model, path: Path):
    data = json.loads(path.read_text())
    obj = model.model_validate(data)
    lost = unknown(data, obj.model_dump(mode="json"), path.name)
    if lost:
        raise SystemExit(f"{path}: fields {model.__name__} does not know: {lost}")
    return obj


root = Path(sys.argv[1])
scanner = JobScanner(root)
seen: dict = {"jobs": {}}
for job_name in scanner.list_jobs():
    job = root / job_name
    load(JobConfig, job / "config.json")
    result = load(JobResult, job / "result.json")
    assert scanner.get_job_config(job_name) is not None and scanner.get_job_result(job_name) is not None
    trials = {}
    for trial_name in scanner.list_trials(job_name):
        folder = job / trial_name
        load(TrialConfig, folder / "config.json")
        trial = load(TrialResult, folder / "result.json")
        lock = load(TrialLock, folder / "lock.json")
        assert scanner.get_trial_result(job_name, trial_name) is not None, trial_name
        steps = None
        if (folder / "agent" / "trajectory.json").is_file():
            steps = len(load(Trajectory, folder / "agent" / "trajectory.json").steps)
        trials[trial_name] = {
            "rewards": trial.verifier_result.rewards if trial.verifier_result else None,
            "reward_valid": trial.reward_valid, "steps": steps,
            "exception": trial.exception_info.exception_type if trial.exception_info else None,
            "agent": f"{trial.agent_info.name}@{trial.agent_info.version}",
            "phases": {p: getattr(trial, p) is not None
                       for p in ("environment_setup", "agent_setup", "agent_execution", "verifier")},
            "tokens": trial.compute_token_cost_totals(),
            "lock": {"task": lock.task.name, "digest": lock.task.digest, "agent": lock.agent.name,
                     "agent_timeout_multiplier": lock.agent_timeout_multiplier}}
    seen["jobs"][job_name] = {"n_total_trials": result.n_total_trials, "trials": trials,
                              "evals": {k: v.metrics for k, v in result.stats.evals.items()},
                              "n_errored_trials": result.stats.n_errored_trials, "n_retries": result.stats.n_retries}
print(json.dumps(seen))
