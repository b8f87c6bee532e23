"""The totals of one run: summary.json, the terminal summary, JUnit properties and progress lines.

Pass@1 counts every instance of the run in its denominator, errors included (an instance the run
could not score is not a pass); errors and apply failures are also counted apart so that a reader
can tell an infrastructure problem from a weak agent. Rates are fractions in [0, 1].
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from pytest_clawswe.files import load_run_info, write_atomic
from pytest_clawswe.report.format import config_label, fmt_pct, fmt_tokens, fmt_usd
from pytest_clawswe.report.health import both_ways, counts
from pytest_clawswe.run.item.result import ERROR
from pytest_clawswe.swe.results.run_dir import APPLY_FAILED, RESOLVED, UNRESOLVED, InstanceResult
from pytest_clawswe.usage import Usage

SUMMARY = "summary.json"
TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def summarize(results: list[InstanceResult], run_info: dict | None = None) -> dict:
    """Totals over the per-instance results of one run (the content of summary.json)."""
    run_info = run_info or {}
    first = results[0] if results else InstanceResult("")
    n = len(results)
    outcomes = Counter(r.outcome for r in results)
    usage = sum((r.usage for r in results), Usage())
    known_costs = [r.cost_usd for r in results if r.cost_usd is not None]
    billed = [r.provider_cost_usd for r in results if r.provider_cost_usd is not None]
    failed: Counter = Counter()
    for r in results:
        failed.update(r.failed_requests)
    unknown_costs = n - len(known_costs)

    per_language: dict[str, dict] = {}
    for lang in sorted({r.language for r in results}):
        rows = [r for r in results if r.language == lang]
        won = sum(r.outcome == RESOLVED for r in rows)
        per_language[lang] = {"instances": len(rows), "resolved": won, "pass_at_1": _rate(won, len(rows))}

    return {
        "run_id": run_info.get("run_id") or first.run_id,
        "harness": run_info.get("harness") or first.harness,
        "model": run_info.get("model") or first.model,
        "dataset": run_info.get("dataset", ""),
        "instances": n,
        "resolved": outcomes[RESOLVED],
        "unresolved": outcomes[UNRESOLVED],
        "apply_failed": outcomes[APPLY_FAILED],
        "errors": outcomes[ERROR],
        "pass_at_1": _rate(outcomes[RESOLVED], n),
        "per_language": per_language,
        # None when any instance's price is unknown: a partial sum would read as the run's cost
        "cost_usd": sum(known_costs) if not unknown_costs else None,
        "cost_usd_known": sum(known_costs),
        "cost_unknown_instances": unknown_costs,
        # what the provider itself billed (OpenRouter's usage.cost), beside our count; None: it said nothing
        "provider_cost_usd": sum(billed) if billed else None,
        "provider_cost_instances": len(billed),
        "failed_requests": dict(sorted(failed.items())),  # provider failures by kind: not turns
        **{name: getattr(usage, name) for name in TOKEN_FIELDS},
        "turns": usage.requests,
        "cache_hit_rate": usage.cache_hit_rate,
        "mean_duration_s": _mean([r.duration_s for r in results]),
        "mean_agent_s": _mean([float(r.timings.get("agent", 0.0)) for r in results]),
        "mean_turns": _rate(usage.requests, n),
        "mean_patch_lines": _mean([r.patch_lines for r in results]),
        "finish_reasons": dict(sorted(Counter(r.finish_reason or "none" for r in results).items())),
        "harness_usage": _sum_harness_usage(results),
        "health": _health(results, run_info),
    }


def _health(results: list[InstanceResult], run_info: dict) -> dict | None:
    """With --health: Pass@1 both ways (every instance / the healthy ones only), the unhealthy instances and
    the instances where PASS_TO_PASS tests that passed at the base commit fail; None without a health file."""
    if not run_info.get("health") and not any(r.health for r in results):
        return None
    ways = both_ways({r.instance_id: r.outcome == RESOLVED for r in results},
                     {r.instance_id: r.health for r in results})
    return {"file": run_info.get("health"), "checked": sum(bool(r.health) for r in results),
            "unhealthy": ways.left_out, "unhealthy_outcomes": {r.instance_id: r.outcome for r in results
                                                               if r.instance_id in ways.left_out},
            "healthy_instances": ways.healthy, "resolved_healthy": ways.passed_healthy,
            "pass_at_1_healthy": ways.rate_healthy,
            "p2p_passed_at_base": {r.instance_id: r.p2p_vs_base["passed_at_base"] for r in results
                                   if r.p2p_vs_base.get("passed_at_base")}}


def _sum_harness_usage(results: list[InstanceResult]) -> dict:
    """Totals of what the harnesses themselves reported, beside the gateway's counts as a cross-check."""
    totals: Counter = Counter()
    reporting = 0
    for r in results:
        numbers = {k: v for k, v in r.harness_usage.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        reporting += bool(numbers)
        totals.update(numbers)
    return {"instances_reporting": reporting, **dict(sorted(totals.items()))}


def write_summary(run_dir: str | Path, results: list[InstanceResult], run_info: dict | None = None) -> dict:
    """Write <run_dir>/summary.json from the per-instance results; returns the summary."""
    summary = summarize(results, run_info if run_info is not None else load_run_info(run_dir))
    write_atomic(Path(run_dir) / SUMMARY, json.dumps(summary, indent=2) + "\n")
    return summary


# ---- formatting, shared with the reports -------------------------------------------------------


def _cost_text(summary: dict) -> str:
    if summary["cost_unknown_instances"] and summary["cost_usd_known"]:
        return f"unknown ({fmt_usd(summary['cost_usd_known'])} known, {summary['cost_unknown_instances']} unpriced)"
    return fmt_usd(summary["cost_usd"])


def _provider_text(summary: dict) -> str:
    """The provider's own bill and the failed calls, when there are any (older summaries lack the keys)."""
    parts = []
    if summary.get("provider_cost_usd") is not None:
        parts.append(f"provider billed {fmt_usd(summary['provider_cost_usd'])} "
                     f"({summary.get('provider_cost_instances')} instances)")
    failed = summary.get("failed_requests") or {}
    if failed:
        parts.append("failed calls " + ", ".join(f"{k} {v}" for k, v in failed.items()))
    return "".join(f" · {p}" for p in parts)


def terminal_lines(summary: dict) -> list[str]:
    """The run's totals for pytest's terminal summary."""
    s = summary
    langs = " · ".join(
        f"{lang} {fmt_pct(v['pass_at_1'])} ({v['resolved']}/{v['instances']})" for lang, v in s["per_language"].items()
    )
    duration = "—" if s["mean_duration_s"] is None else f"{s['mean_duration_s']:.0f} s (agent {s['mean_agent_s']:.0f} s)"
    turns = "—" if s["mean_turns"] is None else f"{s['mean_turns']:.1f}"
    return [
        f"{config_label(s['harness'], s['model'])}: Pass@1 {fmt_pct(s['pass_at_1'])} ({s['resolved']}/{s['instances']} resolved)"
        f" · unresolved {s['unresolved']} · apply failed {s['apply_failed']} · errors {s['errors']}",
        f"per language: {langs or '—'}",
        f"cost {_cost_text(s)} · tokens in {fmt_tokens(s['input_tokens'])} out {fmt_tokens(s['output_tokens'])}"
        f" cache read {fmt_tokens(s['cache_read_tokens'])} write {fmt_tokens(s['cache_write_tokens'])}"
        f" · cache hit {fmt_pct(s['cache_hit_rate'])}{_provider_text(s)}",
        f"mean duration {duration} · mean turns {turns}",
        *_health_lines(s),
    ]


def _health_lines(summary: dict) -> list[str]:
    """The run's health marks (--health): Pass@1 both ways, and each item on an unhealthy instance."""
    h = summary.get("health")
    if not h:
        return []
    by_id = h.get("unhealthy_outcomes") or {}
    unhealthy = h["unhealthy"]
    lines = [f"health ({h['file'] or 'no file'}): {len(unhealthy)} of {summary['instances']} instances unhealthy"
             + (f" ({counts(unhealthy)})" if unhealthy else "")
             + f" · Pass@1 all {fmt_pct(summary['pass_at_1'])} ({summary['resolved']}/{summary['instances']})"
             f" · healthy only {fmt_pct(h['pass_at_1_healthy'])} ({h['resolved_healthy']}/{h['healthy_instances']})"
             + (f" · {summary['instances'] - h['checked']} not in the file" if h["checked"] < summary["instances"]
                else "")]
    if unhealthy:
        lines.append("on unhealthy instances: " + ", ".join(
            f"{iid} ({verdict.replace('_', ' ')}{', ' + by_id[iid].replace('_', ' ') if iid in by_id else ''})"
            for iid, verdict in unhealthy.items()))
    if h["p2p_passed_at_base"]:
        lines.append("PASS_TO_PASS tests that passed at the base commit in the health check fail in: " + ", ".join(
            f"{iid} ({len(tests)}, e.g. {tests[0]})" for iid, tests in h["p2p_passed_at_base"].items()))
    return lines


def progress_line(results: list[InstanceResult], total: int | None = None) -> str:
    """One line for a running benchmark: instances done, resolved so far and cost so far."""
    done = len(results)
    won = sum(r.outcome == RESOLVED for r in results)
    known = sum(r.cost_usd for r in results if r.cost_usd is not None)
    unknown = sum(r.cost_usd is None for r in results)
    errors = sum(r.outcome == ERROR for r in results)
    line = f"{done}/{total if total is not None else '?'} done · resolved {won} ({fmt_pct(_rate(won, done))})"
    line += f" · cost so far {fmt_usd(known)}" + (f" (+{unknown} unpriced)" if unknown else "")
    return line + (f" · errors {errors}" if errors else "")


def _prop(value) -> str:
    if value is None:
        return "unknown"
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def junit_properties(summary: dict) -> list[tuple[str, str]]:
    """Run totals as JUnit testsuite properties (for `record_testsuite_property`)."""
    names = ["instances", "resolved", "unresolved", "apply_failed", "errors", "pass_at_1", "cost_usd",
             "cost_unknown_instances", *TOKEN_FIELDS, "turns", "cache_hit_rate", "mean_duration_s",
             "mean_agent_s", "mean_turns"]
    props = [(f"clawswe.{name}", _prop(summary[name])) for name in names]
    props += [(f"clawswe.pass_at_1.{lang}", _prop(v["pass_at_1"])) for lang, v in summary["per_language"].items()]
    health = summary.get("health")
    if health:  # --health: Pass@1 over the healthy instances only, beside pass_at_1 over all
        props += [("clawswe.pass_at_1_healthy", _prop(health["pass_at_1_healthy"])),
                  ("clawswe.healthy_instances", _prop(health["healthy_instances"])),
                  ("clawswe.unhealthy_instances", _prop(len(health["unhealthy"])))]
    return props


def instance_properties(result: InstanceResult) -> list[tuple[str, str]]:
    """One instance's accounting as JUnit testcase properties (for `item.user_properties`)."""
    u = result.usage
    values = {
        "outcome": result.outcome,
        "finish_reason": result.finish_reason,
        "cost_usd": result.cost_usd,
        "duration_s": result.duration_s,
        "agent_s": float(result.timings.get("agent", 0.0)),
        "turns": u.requests,
        **{name: getattr(u, name) for name in TOKEN_FIELDS},
        "cache_hit_rate": u.cache_hit_rate,
        "patch_lines": result.patch_lines,
    }
    if result.health:  # --health: the instance's verdict, and the failing tests that passed at the base commit
        values["health"] = result.health
        values["health_reason"] = result.health_reason
        values["p2p_passed_at_base"] = len(result.p2p_vs_base.get("passed_at_base", []))
    return [(f"clawswe.{k}", _prop(v)) for k, v in values.items()]
