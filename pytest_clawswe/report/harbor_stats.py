"""A Harbor job's statistics (its JobResult's `stats`, a JobStats) summed from its trials the way Harbor sums them
(harbor 0.26.0's JobStats.increment, and its Mean metric over the main reward), so its viewer's job list shows our jobs as it shows its
own: per agent, model and dataset, the trials with a valid reward, each reward value's trials, the errored trials
by exception type, and the mean of each reward over the trials that have one."""
from __future__ import annotations


def _rewards(result: dict) -> dict | None:
    """The trial's rewards when Harbor counts them (its reward_valid): every exception our trials record with a
    reward (report/harbor_trial.py, FINISH_EXCEPTIONS) is one Harbor's error policy leaves the reward valid for."""
    return (result.get("verifier_result") or {}).get("rewards") or None


def mean_metric(rewards: list[dict]) -> dict:
    """Harbor's Mean over the trials' main reward ("reward"). Harbor's own Mean takes the mean of every reward key
    when a trial has several, a trial without a key counting 0; our criteria differ from task to task, so their
    means over a job would mean nothing: each trial shows its own."""
    values = [reward.get("reward", 0) for reward in rewards]
    return {"mean": sum(values) / len(values)}


def job_stats(results: list[dict], retries: int) -> dict:
    """`retries`: how many of the trials are attempts that were run again."""
    evals: dict[str, dict] = {}
    rewards_of: dict[str, list[dict]] = {}
    totals: dict[str, float | None] = {"n_input_tokens": None, "n_cache_tokens": None, "n_output_tokens": None,
                                       "cost_usd": None}
    errored = 0
    for result in results:
        agent = result["agent_info"]
        model = (agent.get("model_info") or {}).get("name")
        key = "__".join(p for p in (agent["name"], model, result.get("source") or "adhoc") if p)
        stats = evals.setdefault(key, {"n_trials": 0, "n_errors": 0, "metrics": [], "pass_at_k": {},
                                       "reward_stats": {}, "exception_stats": {}})
        rewards = _rewards(result)
        if rewards is not None:
            stats["n_trials"] += 1
            rewards_of.setdefault(key, []).append(rewards)
            for name, value in rewards.items():
                stats["reward_stats"].setdefault(name, {}).setdefault(str(value), []).append(result["trial_name"])
        error = result.get("exception_info")
        if error is not None:
            stats["exception_stats"].setdefault(error["exception_type"], []).append(result["trial_name"])
            stats["n_errors"] += 1
            errored += 1
        context = result.get("agent_result") or {}
        for field in totals:
            if context.get(field) is not None:
                totals[field] = (totals[field] or 0) + context[field]
    for key, graded in rewards_of.items():
        evals[key]["metrics"] = [mean_metric(graded)]
    return {"n_completed_trials": len(results), "n_errored_trials": errored, "n_running_trials": 0,
            "n_pending_trials": 0, "n_cancelled_trials": 0, "n_retries": retries,
            "evals": {key: evals[key] for key in sorted(evals)}, **totals}
