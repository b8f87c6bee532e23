"""Tables for people and programs: number formats, Markdown and CSV writers shared by every benchmark's report."""
from __future__ import annotations

import math
import numbers
from pathlib import Path

import pandas as pd

from pytest_clawswe.files import write_atomic
from pytest_clawswe.report.format import fmt_tokens


def _usd(value: float) -> str:
    decimals = getattr(value, "decimals", None)  # a published cost: the paper's own precision
    if decimals is not None:
        return f"{value:,.{decimals}f}"
    # demo runs cost fractions of a cent: keep two significant digits rather than print 0.00
    return f"{value:,.2f}" if value >= 0.01 or value == 0 else f"{value:.2g}"


# column name -> how Markdown shows its numbers
FORMATS = {
    "Resolved": "{:.0f}",
    "Instances": "{:.0f}",
    "Pass@1 (%)": "{:.1f}",
    "Pass@1 healthy (%)": "{:.1f}",
    "Healthy": "{:.0f}",
    "Cost ($)": _usd,
    "Input tokens": fmt_tokens,
    "Output tokens": fmt_tokens,
    "Mean duration (s)": "{:.1f}",
    "Mean turns": "{:.1f}",
    "Cache hit (%)": "{:.1f}",
    "Apply failed": "{:.0f}",
    "Errors": "{:.0f}",
    "McNemar p": "{:.3g}",
}


def _pct(rate: float | None) -> float | None:
    return None if rate is None else 100 * rate


def _drop_empty(df: pd.DataFrame) -> pd.DataFrame:
    return df.dropna(axis=1, how="all") if not df.empty else df


def _cell(value, fmt, missing: str = "—") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return missing
    if isinstance(value, bool) or not isinstance(value, numbers.Number):
        return str(value)
    if fmt is None:
        fmt = "{:,.1f}" if isinstance(value, float) else "{}"
    return fmt(value) if callable(fmt) else fmt.format(value)


def formatted(df: pd.DataFrame) -> pd.DataFrame:
    """The table as display strings (shared by Markdown and HTML)."""
    out = pd.DataFrame(index=df.index)
    for name in df.columns:
        missing = "unknown" if name == "Cost ($)" else "—"  # an unpriced model: never shown as 0
        out[name] = [_cell(v, FORMATS.get(name), missing) for v in df[name].astype(object)]
    return out


def is_numeric(df: pd.DataFrame, column: str) -> bool:
    """Right-align it? (A measure with no value in any row is still a number column.)"""
    return column in FORMATS or pd.api.types.is_numeric_dtype(df[column])


def to_markdown(df: pd.DataFrame, header: dict[str, str] | None = None) -> str:
    """A GitHub-flavoured Markdown table; text columns left-aligned, numbers right-aligned."""
    if df.empty:
        return "_(no rows)_\n"
    header = header or {}
    cells = formatted(df)
    numeric = [is_numeric(df, c) for c in df.columns]
    lines = [
        "| " + " | ".join(header.get(c, c) for c in df.columns) + " |",
        "| " + " | ".join("---:" if num else ":---" for num in numeric) + " |",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in cells.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def write_table(df: pd.DataFrame, out_dir: Path, name: str, header: dict[str, str] | None = None) -> list[Path]:
    """<name>.csv (numbers) and <name>.md (formatted) in out_dir."""
    csv_path, md_path = out_dir / f"{name}.csv", out_dir / f"{name}.md"
    write_atomic(csv_path, df.to_csv(index=False))
    write_atomic(md_path, to_markdown(df, header))
    return [csv_path, md_path]
