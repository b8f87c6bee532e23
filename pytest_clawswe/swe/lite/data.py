"""Calibration data for Lite selection: which column resolved which instance, and at what cost.

A column is one harness x model run over the candidate pool. Two ways in, which can be mixed:

Run directories of this project (`--run-dir`): one column per directory, named "<harness> x <model>"
from run.json (the directory name when run.json lacks them). An instance whose outcome is an
infrastructure error (resolved None) counts as missing, never as a failure.

A CSV table, long form, one row per column x instance:

    column,instance_id,language,resolved,cost_usd
    openclaw x GLM 5.1,django__django-11099,Python,1,0.42
    hermes x GLM 5.1,django__django-11099,Python,0,0.31

or wide form, one row per instance and one resolved column per calibration column:

    instance_id,language,cost_usd,openclaw x GLM 5.1,hermes x GLM 5.1
    django__django-11099,Python,0.42,1,0

In wide form `cost_usd` is one per-instance cost shared by every column, and `cost_usd:<column>`
gives a column its own. resolved: 1/0, true/false, yes/no; empty (or error/none/nan) = missing.
cost_usd: empty = unknown. language: empty falls back to the shipped Claw-SWE-Bench lists.
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pytest_clawswe.errors import UserError
from pytest_clawswe.files import load_run_info
from pytest_clawswe.swe.dataset import language_group
from pytest_clawswe.swe.results.run_dir import load_results

LONG_FORM_FIELDS = ("column", "instance_id", "language", "resolved", "cost_usd")
_TRUE = {"1", "true", "yes", "y", "resolved", "1.0"}
_FALSE = {"0", "false", "no", "n", "unresolved", "0.0"}
_MISSING = {"", "none", "null", "nan", "na", "error"}


@dataclass
class Calibration:
    """Outcomes of the calibration columns on a pool of instances."""

    instance_ids: list[str]
    languages: np.ndarray  # (instances,) language group names
    columns: list[str]
    resolved: np.ndarray  # (instances, columns) 1.0 / 0.0, NaN = missing
    cost: np.ndarray  # (instances, columns) USD, NaN = unknown

    def difficulty(self) -> np.ndarray:
        """Mean resolved rate of each instance over the columns that have an outcome (NaN if none)."""
        known = ~np.isnan(self.resolved)
        count = known.sum(axis=1)
        total = np.where(known, self.resolved, 0.0).sum(axis=1)
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


Record = tuple[str, str, str, float, float]  # column, instance_id, language, resolved (NaN = missing), cost


def from_records(records: list[Record]) -> Calibration:
    """Build a calibration from (column, instance_id, language, resolved, cost) rows."""
    if not records:
        raise UserError("the calibration input has no rows; pass run directories or a CSV table with results")
    columns = list(dict.fromkeys(r[0] for r in records))
    ids = sorted({r[1] for r in records})
    row_of = {iid: i for i, iid in enumerate(ids)}
    col_of = {c: j for j, c in enumerate(columns)}
    resolved = np.full((len(ids), len(columns)), np.nan)
    cost = np.full_like(resolved, np.nan)
    seen: set[tuple[int, int]] = set()
    stated: dict[str, str] = {}
    for column, iid, language, res, usd in records:
        cell = (row_of[iid], col_of[column])
        if cell in seen:
            raise UserError(f"column {column!r} has instance {iid} twice; keep one result per column and instance")
        seen.add(cell)
        resolved[cell], cost[cell] = res, usd
        if language:
            language = _normalise_language(language)
            if stated.setdefault(iid, language) != language:
                raise UserError(f"instance {iid} is given two languages ({stated[iid]}, {language}); "
                                "make its language the same in every column")
    unmeasured = [c for j, c in enumerate(columns) if np.isnan(resolved[:, j]).all()]
    if unmeasured:
        raise UserError(f"column {unmeasured[0]!r} has no resolved outcome at all; drop it or re-run its errors")
    return Calibration(ids, np.array(_languages(ids, stated), dtype=object), columns, resolved, cost)


def _normalise_language(name: str) -> str:
    group = language_group(name)  # the paper's eight groups; other benchmarks keep their own names
    return group if group != "unknown" else name.strip()


def _languages(ids: list[str], stated: dict[str, str]) -> list[str]:
    missing = [iid for iid in ids if iid not in stated]
    if missing:
        from pytest_clawswe.swe.dataset import load_instances

        shipped = {inst.instance_id: inst.language for inst in load_instances()}
        for iid in missing:
            if iid not in shipped:
                raise UserError(f"instance {iid} has no language and is not in the shipped lists; "
                                "give it one (the language field of its result, or a language column)")
            stated[iid] = shipped[iid]
    return [stated[iid] for iid in ids]


def _parse_resolved(text: str, where: str) -> float:
    value = (text or "").strip().lower()
    if value in _TRUE:
        return 1.0
    if value in _FALSE:
        return 0.0
    if value in _MISSING:
        return math.nan
    raise UserError(f"{where}: resolved is {text!r}; use 1/0, true/false, or leave it empty when unknown")


def _parse_cost(text: str, where: str) -> float:
    value = (text or "").strip()
    if value.lower() in _MISSING:
        return math.nan
    try:
        usd = float(value)
    except ValueError:
        raise UserError(f"{where}: cost_usd is {text!r}; use a number of USD or leave it empty") from None
    if usd < 0 or math.isnan(usd):
        raise UserError(f"{where}: cost_usd is {text!r}; a cost cannot be negative")
    return usd


def _required(row: dict, name: str, where: str) -> str:
    value = (row.get(name) or "").strip()
    if not value:
        raise UserError(f"{where}: {name} is empty; every row needs one")
    return value


def read_table(path: str | Path) -> list[Record]:
    """Records of a CSV table in long or wide form (see the module docstring)."""
    path = Path(path)
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        header = [h.strip() for h in reader.fieldnames or []]
        rows = [{(k or "").strip(): v for k, v in row.items()} for row in reader]
    if "instance_id" not in header:
        raise UserError(f"{path} has no instance_id column; the header must be "
                        f"{','.join(LONG_FORM_FIELDS)} (long form) or instance_id,language,<column>... (wide form)")
    records = []
    if "column" in header and "resolved" in header:
        for line, row in enumerate(rows, start=2):
            where = f"{path}:{line}"
            records.append((_required(row, "column", where), _required(row, "instance_id", where),
                            (row.get("language") or "").strip(), _parse_resolved(row["resolved"], where),
                            _parse_cost(row.get("cost_usd"), where)))
        return records
    flags = [h for h in header if h not in ("instance_id", "language", "cost_usd") and not h.startswith("cost_usd:")]
    if not flags:
        raise UserError(f"{path} has no calibration columns; add one resolved column per harness x model run")
    for line, row in enumerate(rows, start=2):
        where = f"{path}:{line}"
        for column in flags:
            usd = row.get(f"cost_usd:{column}", row.get("cost_usd"))
            records.append((column, _required(row, "instance_id", where), (row.get("language") or "").strip(),
                            _parse_resolved(row[column], where), _parse_cost(usd, where)))
    return records


def read_run_dir(path: str | Path) -> list[Record]:
    """Records of one run directory: one column."""
    path = Path(path)
    results = load_results(path)
    if not results:
        raise UserError(f"{path} has no finished instances (instances/<id>/metadata.json); "
                        "pass the --run-dir of a benchmark run")
    info = load_run_info(path)
    column = f"{info['harness']} x {info['model']}" if info.get("harness") and info.get("model") else path.name
    return [(column, r.instance_id, r.language,
             math.nan if r.resolved is None else float(r.resolved),
             math.nan if r.cost_usd is None else float(r.cost_usd)) for r in results]


def load_calibration(sources: list[str | Path]) -> Calibration:
    """Run directories and CSV tables, merged into one calibration."""
    records: list[Record] = []
    names: dict[str, int] = {}
    for source in sources:
        path = Path(source)
        if path.is_dir():
            rows = read_run_dir(path)
            # two runs of the same harness x model stay separate columns
            if rows[0][0] in names:
                rows = [(f"{r[0]} ({path.name})", *r[1:]) for r in rows]
        elif path.is_file():
            rows = read_table(path)
        else:
            raise UserError(f"{path} does not exist; pass run directories or a CSV table of calibration results")
        for column in {r[0] for r in rows}:
            names[column] = names.get(column, 0) + 1
        records.extend(rows)
    return from_records(records)


def write_long_table(cal: Calibration, path: str | Path) -> None:
    """The long-form CSV of a calibration (the inverse of `read_table`)."""
    with Path(path).open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(LONG_FORM_FIELDS)
        for i, iid in enumerate(cal.instance_ids):
            for j, column in enumerate(cal.columns):
                res, usd = cal.resolved[i, j], cal.cost[i, j]
                writer.writerow([column, iid, cal.languages[i],
                                 "" if np.isnan(res) else int(res), "" if np.isnan(usd) else repr(float(usd))])


def synthetic_calibration(languages: list[str], n_columns: int = 17, seed: int = 0,
                          instance_ids: list[str] | None = None) -> tuple[Calibration, np.ndarray, np.ndarray]:
    """A calibration drawn from a known truth: (calibration, instance difficulty, column strength).

    Outcomes follow a logistic model, P(resolved) = sigmoid(strength[c] + noise[c, lang] - difficulty[i]);
    costs are a per-column price times a per-instance effort that grows with difficulty. For tests,
    benchmarks, and trying the command without runs.
    """
    rng = np.random.default_rng(seed)
    groups, lang_index = np.unique(np.asarray(languages, dtype=object), return_inverse=True)
    n = len(languages)
    slug = [str(g).lower().replace("/", "_") for g in groups]
    ids = instance_ids or [f"{slug[g]}__task-{i:04d}" for i, g in enumerate(lang_index)]
    difficulty = rng.normal(0.0, 1.6, n) + rng.normal(0.0, 0.5, len(groups))[lang_index]
    strength = np.sort(rng.normal(1.0, 0.8, n_columns))[::-1]
    interaction = rng.normal(0.0, 0.3, (n_columns, len(groups)))
    logit = strength[None, :] + interaction[:, lang_index].T - difficulty[:, None]
    resolved = (rng.random((n, n_columns)) < 1.0 / (1.0 + np.exp(-logit))).astype(float)
    price = np.exp(rng.uniform(np.log(0.02), np.log(4.0), n_columns))
    effort = np.exp(0.4 * difficulty + rng.normal(0.0, 0.6, n))
    cost = price[None, :] * effort[:, None] * np.exp(rng.normal(0.0, 0.3, (n, n_columns)))
    columns = [f"claw{c % 5} x model{c:02d}" for c in range(n_columns)]
    order = np.argsort(ids, kind="stable")  # calibrations keep instances sorted by id
    cal = Calibration([ids[i] for i in order], groups[lang_index][order].astype(object), columns,
                      resolved[order], cost[order])
    return cal, difficulty[order], strength
