"""The tables: main table, per-language breakdown, paired comparisons and repeats; Markdown and CSV.

Each table is built as a pandas DataFrame of plain numbers (what the CSV holds); `to_markdown`
formats it for reading. Measures the published data does not have (tokens) are left out of its
tables instead of being shown as a wall of dashes.
"""
from __future__ import annotations

from itertools import combinations

import pandas as pd

from pytest_clawswe.report.format import config_label
from pytest_clawswe.report.stats import compare_paired, mean_pass_at_k, spread
from pytest_clawswe.report.tables import _pct
from pytest_clawswe.swe.report.columns import Column, Run, group_repeats, language_order, repeat_label


def _label_columns(c: Column, with_run: bool) -> dict:
    row = {"Harness": c.harness, "Model": c.model + (" †" if c.note else "")}
    if with_run:  # some configuration was run more than once
        row["Run"] = c.run_label or None
    return row


def main_table(columns: list[Column]) -> pd.DataFrame:
    """The paper's main table: one row per column."""
    with_run = any(c.run_label for c in columns)
    rows = []
    for c in columns:
        rows.append({
            **_label_columns(c, with_run),
            "Resolved": c.resolved,
            "Instances": c.instances,
            "Pass@1 (%)": _pct(c.pass_at_1),
            # --health: Pass@1 over the healthy instances only (the column is dropped when no run has it)
            "Pass@1 healthy (%)": _pct(c.healthy[0] / c.healthy[1] if c.healthy and c.healthy[1] else None),
            "Healthy": c.healthy[1] if c.healthy else None,
            "Cost ($)": c.cost_usd,
            "Provider-billed ($)": c.provider_cost_usd,
            "Input tokens": c.input_tokens,
            "Output tokens": c.output_tokens,
            "Mean duration (s)": c.mean_duration_s,
            "Mean turns": c.mean_turns,
            "Cache hit (%)": _pct(c.cache_hit_rate),
            "Apply failed": c.apply_failed,
            "Errors": c.errors,
        })
    table = pd.DataFrame(rows)
    if not table.empty:  # object dtype: a published cost keeps its precision (a float64 column would drop it)
        table["Cost ($)"] = pd.Series([c.cost_usd for c in columns], dtype=object, index=table.index)
    if all(c.provider_cost_usd is None for c in columns):  # only providers that bill in their answers have it
        table = table.drop(columns=["Provider-billed ($)"], errors="ignore")
    if all(c.healthy is None for c in columns):  # no run was given --health
        table = table.drop(columns=["Pass@1 healthy (%)", "Healthy"], errors="ignore")
    if any(c.run for c in columns):  # a run has every measure, and shows "unknown" where so
        return table
    # published data lacks some measures; the paper's In/Out token columns stay, "—" where the data lacks them
    kept = {"Input tokens", "Output tokens"}
    return table[[c for c in table.columns if c in kept or table[c].notna().any()]]


def language_table(columns: list[Column]) -> pd.DataFrame:
    """Pass@1 (%) per language group, one row per column, and the overall Pass@1 last."""
    languages = language_order({lang for c in columns for lang in c.per_language})
    with_run = any(c.run_label for c in columns)
    rows = []
    for c in columns:
        row = _label_columns(c, with_run)
        for lang in languages:
            resolved, n = c.per_language.get(lang, (0, 0))
            row[lang] = 100 * resolved / n if n else None
        row["All"] = _pct(c.pass_at_1)
        rows.append(row)
    return pd.DataFrame(rows)


def language_sizes(columns: list[Column]) -> dict[str, int | None]:
    """Instances per language when every column ran the same number of them, else None for it."""
    languages = language_order({lang for c in columns for lang in c.per_language})
    sizes = {}
    for lang in languages:
        ns = {c.per_language.get(lang, (0, 0))[1] for c in columns}
        sizes[lang] = ns.pop() if len(ns) == 1 else None
    return sizes


def comparison_table(runs: list[Run], pairs: list[tuple[Run, Run]] | None = None,
                     confidence: float = 0.95) -> pd.DataFrame:
    """Paired comparison of runs on their common instances (all pairs unless `pairs` is given)."""
    pairs = pairs if pairs is not None else list(combinations(runs, 2))
    rows = []
    level = f"{100 * confidence:g}%"
    for a, b in pairs:
        cmp = compare_paired(a.resolved_by_instance, b.resolved_by_instance, confidence)
        rows.append({
            "A": run_label(a, runs),
            "B": run_label(b, runs),
            "Common": cmp.n,
            "Pass@1 A (%)": 100 * cmp.pass_a,
            "Pass@1 B (%)": 100 * cmp.pass_b,
            "Diff (pp)": 100 * cmp.diff,
            f"{level} CI low (pp)": 100 * cmp.ci_low,
            f"{level} CI high (pp)": 100 * cmp.ci_high,
            "Only A": cmp.only_a,
            "Only B": cmp.only_b,
            "McNemar p": cmp.p_value,
            "Verdict": verdict(cmp),
        })
    return pd.DataFrame(rows)


def verdict(cmp) -> str:
    if cmp.n == 0:
        return "no common instances"
    if not cmp.significant():
        return "no evidence of a difference"
    return "A better" if cmp.diff > 0 else "B better"


def run_label(run: Run, runs: list[Run]) -> str:
    """harness × model, and which run when the configuration ran more than once."""
    text, repeat = config_label(run.harness, run.model), repeat_label(run, runs)
    return f"{text} ({repeat})" if repeat else text


def repeats_table(columns: list[Column]) -> pd.DataFrame:
    """Per configuration with several runs: mean and spread of Pass@1, and pass@k on the
    instances every repeat ran."""
    rows = []
    for (harness, model), group in group_repeats(columns).items():
        if len(group) < 2:
            continue
        rates = spread([c.pass_at_1 for c in group])
        common = set.intersection(*(set(c.run.resolved_by_instance) for c in group))
        outcomes = {i: [c.run.resolved_by_instance[i] for c in group] for i in common}
        row = {
            "Harness": harness,
            "Model": model,
            "Runs": rates.n,
            "Mean Pass@1 (%)": 100 * rates.mean,
            "SD (pp)": 100 * rates.stdev,
            "Min (%)": 100 * rates.low,
            "Max (%)": 100 * rates.high,
            "Common": len(common),
        }
        for k in range(1, len(group) + 1):
            row[f"pass@{k} (%)"] = 100 * mean_pass_at_k(outcomes, k) if outcomes else None
        rows.append(row)
    return pd.DataFrame(rows)


def language_header(columns: list[Column]) -> dict[str, str]:
    """Language headers that say how many instances each percentage is out of, when that is one number."""
    return {lang: f"{lang} (n={n})" for lang, n in language_sizes(columns).items() if n}


