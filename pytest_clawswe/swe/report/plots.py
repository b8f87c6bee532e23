"""The figures: Pass@1 against total cost with its Pareto frontier, and Pass@1 per language.

Each figure is written as PNG (for the HTML report and quick looks) and SVG (for papers).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, never a window
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402

from pytest_clawswe.report.format import config_label  # noqa: E402
from pytest_clawswe.swe.report.columns import Column, group_repeats, pareto_front  # noqa: E402
from pytest_clawswe.swe.report.tables import language_sizes, language_table  # noqa: E402

FORMATS = ("png", "svg")
MARKERS = "osD^vP*Xh<>p"


@dataclass
class Point:
    """One configuration on the cost plot; repeats give its mean and the range of Pass@1."""

    harness: str
    model: str
    cost: float
    score: float  # Pass@1 in %
    low: float | None = None
    high: float | None = None
    label: str = ""
    note: str = ""  # e.g. "post-paper": the label gets a dagger and the figure a footnote


def points_from_columns(columns: list[Column]) -> tuple[list[Point], list[str]]:
    """Plot points (repeats averaged) and the labels of configurations left out for unknown cost.
    A label leaves out what all points share (one harness, or one model): the title says it."""
    groups = group_repeats(columns)
    one_harness = len({h for h, _ in groups}) == 1
    one_model = len({m for _, m in groups}) == 1
    points, unplotted = [], []
    for (harness, model), group in groups.items():
        if one_harness != one_model:
            label = model if one_harness else harness
        else:
            label = config_label(harness, model)
        costs = [c.cost_usd for c in group]
        if any(cost is None for cost in costs):
            unplotted.append(config_label(harness, model))
            continue
        scores = [100 * c.pass_at_1 for c in group]
        point = Point(harness, model, sum(costs) / len(costs), sum(scores) / len(scores), note=group[0].note,
                      label=label + (" †" if group[0].note else ""))
        if len(group) > 1:
            point.low, point.high = min(scores), max(scores)
            point.label += f" (mean of {len(group)} runs)"
        points.append(point)
    return points, unplotted


POST_PAPER = "post-paper"


def front_indices(points: list[Point], with_post_paper: bool = False) -> list[int]:
    """Indices of the non-dominated points (cheapest first). Post-paper points (e.g. GLM 5.2) are not in the
    paper's frontier: they are drawn, but neither on it nor dominating it, unless asked."""
    eligible = [i for i, p in enumerate(points) if with_post_paper or p.note != POST_PAPER]
    return [eligible[j] for j in pareto_front([(points[i].cost, points[i].score) for i in eligible])]


def frontier(points: list[Point], with_post_paper: bool = False) -> list[Point]:
    """The non-dominated points (cheapest first)."""
    return [points[i] for i in front_indices(points, with_post_paper)]


def shared_setting(points: list[Point]) -> str:
    """What every point has in common and its label therefore leaves out, for the title."""
    if len(points) > 1 and len({p.model for p in points}) == 1 and len({p.harness for p in points}) > 1:
        return f"model {points[0].model}"
    if len(points) > 1 and len({p.harness for p in points}) == 1 and len({p.model for p in points}) > 1:
        return f"harness {points[0].harness}"
    return ""


def _save(fig, stem: Path) -> list[Path]:
    paths = []
    for fmt in FORMATS:
        path = stem.with_suffix(f".{fmt}")
        fig.savefig(path, dpi=150, bbox_inches="tight")
        paths.append(path)
    plt.close(fig)
    return paths


def _usd_tick(value: float, _pos) -> str:
    if value >= 1:
        return f"${value:,.0f}"
    return f"${value:.2g}"


def pareto_plot(points: list[Point], stem: Path, title: str, unplotted: list[str] | tuple[str, ...] = (),
                with_post_paper: bool = False) -> list[Path]:
    """Pass@1 (y) against total cost (log x), the frontier drawn as a step line, every point labelled."""
    if not points:  # say so, rather than draw empty axes that look like a bug
        return _nothing_to_plot(stem, title, unplotted)
    fig, ax = plt.subplots(figsize=(9, 6))
    harnesses = list(dict.fromkeys(p.harness for p in points))
    models = list(dict.fromkeys(p.model for p in points))
    colors = {h: plt.get_cmap("tab10")(i % 10) for i, h in enumerate(harnesses)}
    markers = {m: MARKERS[i % len(MARKERS)] for i, m in enumerate(models)}
    front = front_indices(points, with_post_paper)  # sorted by cost

    for i, p in enumerate(points):
        on_front = i in front
        ax.scatter(p.cost, p.score, s=90 if on_front else 60, color=colors[p.harness], marker=markers[p.model],
                   edgecolors="black" if on_front else "none", linewidths=1.2, alpha=1 if on_front else 0.75,
                   zorder=3, clip_on=False)  # a $0 point sits on the axis: draw it whole
        if p.low is not None:  # repeats: the range of their Pass@1 around the mean
            ax.errorbar(p.cost, p.score, yerr=[[p.score - p.low], [p.high - p.score]], fmt="none",
                        ecolor=colors[p.harness], elinewidth=1.2, capsize=4, zorder=2)

    if front:
        xs = [points[i].cost for i in front]
        ys = [points[i].score for i in front]
        # with a budget x the best reachable Pass@1 is the last frontier point left of x: a step
        ax.step(xs, ys, where="post", color="black", linestyle="--", linewidth=1, zorder=1,
                label="Pareto frontier")

    _cost_axis(ax, points)
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_ylabel("Pass@1 (%)")
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    _pad_limits(ax, points)

    handles = [plt.Line2D([], [], color="black", linestyle="--", label="Pareto frontier")]
    if len(harnesses) > 1 and len(models) > 1:  # otherwise the point labels say it all
        handles += [plt.Line2D([], [], color=colors[h], marker="o", linestyle="", label=h) for h in harnesses]
        handles += [plt.Line2D([], [], color="grey", marker=markers[m], linestyle="", label=m) for m in models]
    # outside the axes, where it can hide no point or label
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    _label_points(fig, ax, points, front)
    _footnotes(ax, points, unplotted)
    return _save(fig, stem)


def _nothing_to_plot(stem: Path, title: str, unplotted) -> list[Path]:
    fig, ax = plt.subplots(figsize=(9, 2.5))
    ax.set_axis_off()
    ax.set_title(title)
    ax.text(0.5, 0.5, "No configuration has a known cost, so there is nothing to plot.\n"
            "Not plotted: " + ", ".join(unplotted) + "\nGive prices with --prices FILE.",
            ha="center", va="center", fontsize=10, wrap=True)
    return _save(fig, stem)


def _cost_axis(ax, points: list[Point]) -> None:
    if any(p.cost <= 0 for p in points):
        # a free run (the scripted model) has no place on a log axis: linear from $0 to the cheapest
        positive = [p.cost for p in points if p.cost > 0]
        ax.set_xscale("symlog", linthresh=min(positive) if positive else 0.01)
        ax.set_xlabel("Total cost (USD; linear near $0, log scale above)")
    else:
        ax.set_xscale("log")
        ax.set_xlabel("Total cost (USD, log scale)")
    ax.xaxis.set_major_formatter(FuncFormatter(_usd_tick))


def _footnotes(ax, points: list[Point], unplotted) -> None:
    footnotes = [f"† {p.label.removesuffix(' †')}: {p.note}" for p in points if p.note]
    if any(p.low is not None for p in points):
        footnotes.append("Bars: lowest and highest Pass@1 over the repeated runs of a configuration.")
    if unplotted:
        footnotes.append("Not plotted (cost unknown): " + ", ".join(unplotted))
    if footnotes:
        ax.annotate("\n".join(footnotes), xy=(0, 0), xycoords="axes fraction", xytext=(0, -40),
                    textcoords="offset points", fontsize=8, ha="left", va="top")


def _pad_limits(ax, points: list[Point]) -> None:
    """Room around the points so that labels at the edges stay inside the axes."""
    lows = [p.low if p.low is not None else p.score for p in points]
    highs = [p.high if p.high is not None else p.score for p in points]
    span = max(max(highs) - min(lows), 5)
    ax.set_ylim(max(0, min(lows) - 0.12 * span), min(100, max(highs) + 0.12 * span) + 0.5)
    costs = [p.cost for p in points if p.cost > 0]
    if ax.get_xscale() == "symlog":
        ax.set_xlim(0, max(costs) * 2.2 if costs else 10 * ax.xaxis.get_transform().linthresh)
    elif costs:
        low, high = min(costs) / 2.2, max(costs) * 2.2
        ax.set_xlim(low, high)
        if high / low < 100:
            # under two decades the powers of ten alone are too few to read a cost off: add 2x and 5x
            ax.xaxis.set_minor_locator(LogLocator(base=10, subs=(2, 5)))
            ax.xaxis.set_minor_formatter(FuncFormatter(_usd_tick))
            ax.xaxis.set_tick_params(which="minor", length=ax.xaxis.majorTicks[0].tick1line.get_markersize())
            ax.grid(True, which="minor", alpha=0.15)


# label offsets tried in order, in points: beside the marker first (right, left, above, below,
# diagonals), then further out with a leader line when the near places are taken
NEAR = [(8, -3), (-8, -3), (0, 9), (0, -14), (8, 8), (-8, 8), (8, -14), (-8, -14)]
FAR = [(24, 18), (-24, 18), (24, -26), (-24, -26), (0, 26), (0, -32), (40, 0), (-40, 0)]


def _frontier_segments(points: list[Point], front: list[int]) -> list[tuple[tuple, tuple]]:
    """The pieces of the step line, in data coordinates: along from each frontier point, then up."""
    segments = []
    for a, b in zip(front, front[1:]):
        (x0, y0), (x1, y1) = (points[a].cost, points[a].score), (points[b].cost, points[b].score)
        segments += [((x0, y0), (x1, y0)), ((x1, y0), (x1, y1))]
    return segments


def _label_points(fig, ax, points: list[Point], front: list[int]) -> None:
    """Put each label where it overlaps the fewest earlier labels, points and frontier lines, inside
    the axes, preferring near places; frontier points are labelled first so they get the best ones."""
    renderer = fig.canvas.get_renderer()
    axes_box = ax.get_window_extent(renderer)
    markers = [_box_around(ax.transData.transform((p.cost, p.score)), 8) for p in points]
    lines = [Bbox(ax.transData.transform([a, b])).padded(2) for a, b in _frontier_segments(points, front)]
    taken = lines + markers
    for i in sorted(range(len(points)), key=lambda i: (i not in front, points[i].cost)):
        p = points[i]
        best = None
        for rank, (dx, dy) in enumerate(NEAR + FAR):
            text = ax.annotate(
                p.label, (p.cost, p.score), xytext=(dx, dy), textcoords="offset points", fontsize=8,
                ha="left" if dx > 0 else "right" if dx < 0 else "center", va="center",
                fontweight="bold" if i in front else "normal",
                arrowprops=dict(arrowstyle="-", color="grey", lw=0.6) if (dx, dy) in FAR else None)
            box = text.get_window_extent(renderer)
            inside = axes_box.contains(box.x0, box.y0) and axes_box.contains(box.x1, box.y1)
            score = (sum(box.overlaps(b) for b in taken) + (0 if inside else 100), rank)
            if best is None or score < best[0]:
                if best is not None:
                    best[1].remove()
                best = (score, text, box)
            else:
                text.remove()
            if score[0] == 0:
                break
        taken.append(best[2])


def _box_around(xy, radius: float) -> Bbox:
    x, y = xy
    return Bbox([[x - radius, y - radius], [x + radius, y + radius]])


def language_chart(columns: list[Column], stem: Path, title: str) -> list[Path]:
    """A heatmap of Pass@1 (%) per language group (columns of the figure) and configuration (rows)."""
    table = language_table(columns)
    values = table.drop(columns=[c for c in ("Harness", "Model", "Run") if c in table.columns])
    values = values.astype(float)
    sizes = language_sizes(columns)
    rows = [c.label for c in columns]
    fig, ax = plt.subplots(figsize=(1.0 * len(values.columns) + 3.5, 0.45 * len(rows) + 1.8))
    image = ax.imshow(values.to_numpy(), cmap="RdYlGn", vmin=0, vmax=100, aspect="auto")
    totals = {c.instances for c in columns}
    sizes["All"] = totals.pop() if len(totals) == 1 else None
    ax.set_xticks(range(len(values.columns)),
                  [f"{lang}\nn={sizes[lang]}" if sizes.get(lang) else lang for lang in values.columns])
    ax.set_yticks(range(len(rows)), rows)
    ax.tick_params(axis="x", top=True, labeltop=True, bottom=False, labelbottom=False)
    for (r, c), value in _cells(values):
        missing = math.isnan(value)  # a language this configuration did not run
        ax.text(c, r, "—" if missing else f"{value:.1f}", ha="center", va="center", fontsize=8,
                color="black" if missing or 25 < value < 85 else "white")  # readable on dark ends
    ax.axvline(len(values.columns) - 1.5, color="white", linewidth=3)  # sets "All" apart
    fig.colorbar(image, ax=ax, label="Pass@1 (%)", fraction=0.03, pad=0.02)
    ax.set_title(title, pad=12)
    return _save(fig, stem)


def _cells(df):
    for r, row in enumerate(df.itertuples(index=False)):
        for c, value in enumerate(row):
            yield (r, c), value
