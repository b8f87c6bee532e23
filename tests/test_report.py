import argparse
import csv
import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest

from pytest_clawswe.cli import UserError
from pytest_clawswe.files import write_atomic
from pytest_clawswe.report import cli as report
from pytest_clawswe.swe.paths import PUBLISHED_RESULTS
from pytest_clawswe.swe.report import published
from pytest_clawswe.swe.report.columns import columns_from_runs, load_runs, pareto_front
from pytest_clawswe.swe.report.plots import points_from_columns
from pytest_clawswe.swe.results.run_dir import InstanceResult, instance_dir
from pytest_clawswe.usage import Usage

LANGS = ["Go", "Rust", "Python"]


def make_run(root: Path, name: str, harness: str, resolved: set[int], n: int = 6, model: str = "scripted/gold",
             cost=lambda i: 0.01 * (i + 1), artifacts: bool = True) -> Path:
    """A run directory as the runner leaves it: run.json and one metadata.json per instance."""
    run_dir = root / name
    write_atomic(run_dir / "run.json", json.dumps({"run_id": name, "harness": harness, "model": model,
                                                   "dataset": "demo"}))
    for i in range(n):
        iid = f"demo__task-{i}"
        outcome = "resolved" if i in resolved else ("error" if i == n - 1 else "unresolved")
        r = InstanceResult(
            instance_id=iid, run_id=name, harness=harness, model=model, language=LANGS[i % len(LANGS)],
            outcome=outcome, resolved=None if outcome == "error" else outcome == "resolved",
            finish_reason="stop", timings={"agent": 10.0 * i + 5, "total": 10.0 * i + 9},
            usage=Usage(requests=i + 2, input_tokens=1000 * (i + 1), output_tokens=100 * (i + 1),
                        cache_read_tokens=3000 * i, cache_write_tokens=10 * i),
            cost_usd=cost(i), patch_lines=i,
        )
        folder = instance_dir(run_dir, iid)
        if artifacts and i % 2 == 0:
            write_atomic(folder / "patch.diff", "diff --git a/x b/x\n")
            write_atomic(folder / "agent.log", "transcript\n")
            write_atomic(folder / "eval" / "report.json", "{}")
            (folder / "session").mkdir(parents=True, exist_ok=True)
        write_atomic(folder / "metadata.json", json.dumps(r.to_json()))
    return run_dir


def report_cli(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    report.add_cli(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["report", *argv])
    return args.func(args)


def read_csv(path: Path) -> list[dict]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def metadata(run_dir: Path) -> list[dict]:
    """Per-instance results read straight from disk, independently of the report code."""
    return [json.loads(p.read_text()) for p in sorted(run_dir.glob("instances/*/metadata.json"))]


@pytest.fixture
def two_runs(tmp_path):
    return (make_run(tmp_path, "run-openclaw", "openclaw", {0, 1, 2, 3}),
            make_run(tmp_path, "run-hermes", "hermes", {0, 2}, cost=lambda i: 0.002 * (i + 1)))


def test_report_tables_are_sums_of_instance_results(tmp_path, two_runs):
    out = tmp_path / "report"
    assert report_cli(*map(str, two_runs), "--out", str(out)) == 0
    rows = {row["Harness"]: row for row in read_csv(out / "main_table.csv")}
    for run_dir in two_runs:
        meta = metadata(run_dir)
        row = rows[json.loads((run_dir / "run.json").read_text())["harness"]]
        usage = [m["usage"] for m in meta]
        input_tokens = sum(u["input_tokens"] for u in usage)
        cache_read = sum(u["cache_read_tokens"] for u in usage)
        resolved = sum(m["outcome"] == "resolved" for m in meta)
        assert int(row["Resolved"]) == resolved and int(row["Instances"]) == len(meta)
        assert float(row["Pass@1 (%)"]) == pytest.approx(100 * resolved / len(meta))
        assert float(row["Cost ($)"]) == pytest.approx(sum(m["cost_usd"] for m in meta))
        assert int(row["Input tokens"]) == input_tokens
        assert int(row["Output tokens"]) == sum(u["output_tokens"] for u in usage)
        assert float(row["Mean duration (s)"]) == pytest.approx(sum(m["timings"]["total"] for m in meta) / len(meta))
        assert float(row["Mean turns"]) == pytest.approx(sum(u["requests"] for u in usage) / len(meta))
        assert float(row["Cache hit (%)"]) == pytest.approx(100 * cache_read / (input_tokens + cache_read))
        assert int(row["Errors"]) == sum(m["outcome"] == "error" for m in meta)

    langs = {row["Harness"]: row for row in read_csv(out / "per_language.csv")}
    for run_dir in two_runs:
        meta = metadata(run_dir)
        row = langs[json.loads((run_dir / "run.json").read_text())["harness"]]
        for lang in LANGS:
            mine = [m for m in meta if m["language"] == lang]
            assert float(row[lang]) == pytest.approx(100 * sum(m["outcome"] == "resolved" for m in mine) / len(mine))
    markdown = (out / "per_language.md").read_text()
    assert "Go (n=2)" in markdown and "| openclaw |" in markdown


def test_report_writes_figures_and_html(tmp_path, two_runs):
    out = tmp_path / "report"
    report_cli(*map(str, two_runs), "--out", str(out))
    for stem in ("pareto", "per_language"):
        assert (out / f"{stem}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert ET.parse(out / f"{stem}.svg").getroot().tag.endswith("svg")
    page = (out / "index.html").read_text()
    assert "Paired comparisons" in page and "Instances across runs" in page


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.targets = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        target = attrs.get("href") if tag == "a" else attrs.get("src") if tag == "img" else None
        if target:
            self.targets.append(target)


def test_html_links_every_recorded_artifact_and_nothing_missing(tmp_path, two_runs):
    out = tmp_path / "report"
    report_cli(*map(str, two_runs), "--out", str(out))
    page = (out / "index.html").read_text()
    parser = Links()
    parser.feed(page)
    files = [t for t in parser.targets if not t.startswith("#")]
    anchors = {t[1:] for t in parser.targets if t.startswith("#")}
    for target in files:
        assert (out / unquote(target)).exists(), target
    for anchor in anchors:
        assert f'id="{anchor}"' in page, anchor
    linked = {(out / unquote(t)).resolve() for t in files}
    for run_dir in two_runs:
        for folder in (run_dir / "instances").iterdir():
            for name in ("patch.diff", "agent.log", "session", "eval/report.json"):
                assert ((folder / name).resolve() in linked) == (folder / name).exists()


def test_paired_comparison_in_report(tmp_path, two_runs):
    out = tmp_path / "report"
    report_cli(*map(str, two_runs), "--out", str(out), "--compare", str(two_runs[0]), str(two_runs[1]))
    (row,) = read_csv(out / "comparisons.csv")
    # worked by hand: A resolves instances 0-3, B resolves 0 and 2, of 6 common ones:
    # both 2, only A 2 (1 and 3), only B 0, neither 2. Diff = (4 - 2) / 6 = 33.3 pp; McNemar exact two-sided
    # on 2 discordant pairs, all one way: 2 * 0.5**2 = 0.5. The Newcombe interval (method 10): Wilson 95%
    # intervals of 4/6 = [0.3000, 0.9032] and 2/6 = [0.0968, 0.7000]; phi = (2*2 - 2*0 - 6/2) / sqrt(4*2*2*4)
    # = 1/8; lower = 1/3 - sqrt(0.3667**2 * (2 - 2/8)) = -0.1517, upper = 1/3 + sqrt(0.2365**2 * (2 - 2/8))
    # = 0.6462.
    assert int(row["Common"]) == 6
    assert (int(row["Only A"]), int(row["Only B"])) == (2, 0)
    assert float(row["Diff (pp)"]) == pytest.approx(33.3, abs=0.05)
    assert float(row["McNemar p"]) == pytest.approx(0.5, abs=1e-3)
    assert float(row["95% CI low (pp)"]) == pytest.approx(-15.17, abs=0.05)
    assert float(row["95% CI high (pp)"]) == pytest.approx(64.62, abs=0.05)
    assert row["Verdict"] == "no evidence of a difference"


AGENT_TEXT = '<script>alert("x")</script>'


def test_agent_controlled_text_is_escaped_in_the_html(tmp_path):
    """Instance ids, errors, models and languages end up on the page; none of them may become markup."""
    run_dir = tmp_path / "evil"
    write_atomic(run_dir / "run.json", json.dumps({"run_id": "evil", "harness": "openclaw",
                                                   "model": "x" + AGENT_TEXT, "dataset": "demo"}))
    iid = 'demo__<img src=x onerror="alert(1)">'
    r = InstanceResult(instance_id=iid, run_id="evil", harness="openclaw", model="x" + AGENT_TEXT,
                       language=AGENT_TEXT, outcome="error", resolved=None, finish_reason=AGENT_TEXT,
                       error="harness failed: " + AGENT_TEXT, cost_usd=0.0)
    write_atomic(instance_dir(run_dir, iid) / "metadata.json", json.dumps(r.to_json()))
    write_atomic(instance_dir(run_dir, iid) / "patch.diff", "")
    out = tmp_path / "report"
    report_cli(str(run_dir), "--out", str(out))
    page = (out / "index.html").read_text()
    assert "<script" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page
    assert "demo__&lt;img src=x onerror=&#34;alert(1)&#34;&gt;" in page
    assert "<style>" in page and '"Segoe UI"' in page  # our own CSS stays as written


def test_repeats_give_mean_spread_and_pass_at_k(tmp_path):
    repeats = tmp_path / "repeats"
    for k, solved in enumerate([{0, 1}, {0, 2}, {0, 1, 3}]):
        make_run(repeats, f"rep-{k}", "openclaw", solved)
    out = tmp_path / "report"
    report_cli(str(repeats), "--out", str(out))  # a folder of runs stands for all of them
    (row,) = read_csv(out / "repeats.csv")
    rates = [2 / 6, 2 / 6, 3 / 6]
    assert int(row["Runs"]) == 3
    assert float(row["Mean Pass@1 (%)"]) == pytest.approx(100 * sum(rates) / 3)
    assert float(row["pass@1 (%)"]) == pytest.approx(100 * sum(rates) / 3)
    assert float(row["pass@3 (%)"]) == pytest.approx(100 * 4 / 6)  # instances 0-3 solved at least once
    assert len(read_csv(out / "main_table.csv")) == 3


def test_repeats_with_one_run_id_are_told_apart_by_folder(tmp_path):
    for k in range(2):
        run_dir = make_run(tmp_path / "runs", f"repeat-{k}", "openclaw", {0, k + 1})
        info = json.loads((run_dir / "run.json").read_text())
        write_atomic(run_dir / "run.json", json.dumps({**info, "run_id": "same-id"}))
    columns = columns_from_runs(load_runs([tmp_path / "runs"]))
    assert [c.run_label for c in columns] == ["repeat-0", "repeat-1"]


def test_html_shows_harness_reported_usage_beside_the_gateway(tmp_path):
    run_dir = make_run(tmp_path, "r", "zeroclaw", {0})
    meta_path = next((run_dir / "instances").glob("*/metadata.json"))
    meta = json.loads(meta_path.read_text())
    write_atomic(meta_path, json.dumps({**meta, "harness_usage": {"input_tokens": 12345, "cost_usd": 0.25}}))
    report_cli(str(run_dir), "--out", str(tmp_path / "report"))
    assert "input_tokens 12.3k · cost_usd 0.25" in (tmp_path / "report" / "index.html").read_text()


def test_numbers_in_the_html_are_formatted_for_people(tmp_path):
    """Issue 25 item 6: the report printed `cost_usd 0.10702800000000001`."""
    run_dir = make_run(tmp_path, "r", "zeroclaw", {0})
    meta_path = next((run_dir / "instances").glob("*/metadata.json"))
    meta = json.loads(meta_path.read_text())
    write_atomic(meta_path, json.dumps({**meta, "harness_usage": {"cost_usd": 0.10702800000000001, "turns": 7}}))
    report_cli(str(run_dir), "--out", str(tmp_path / "report"))
    page = (tmp_path / "report" / "index.html").read_text()
    assert "cost_usd 0.107 · turns 7" in page
    assert not re.search(r"\d\.\d{9,}", page), re.search(r".{40}\d\.\d{9,}.{20}", page)


def test_unknown_cost_is_shown_as_unknown_and_left_off_the_plot(tmp_path, two_runs):
    unpriced = make_run(tmp_path, "run-nanobot", "nanobot", {1}, cost=lambda i: None if i == 2 else 0.1)
    runs = load_runs([*two_runs, unpriced])
    columns = columns_from_runs(runs)
    points, unplotted = points_from_columns(columns)
    assert unplotted == ["nanobot × scripted/gold"] and len(points) == 2
    out = tmp_path / "report"
    report_cli(*map(str, [*two_runs, unpriced]), "--out", str(out))
    rows = {row["Harness"]: row for row in read_csv(out / "main_table.csv")}
    assert rows["nanobot"]["Cost ($)"] == ""
    assert "| nanobot | scripted/gold |" in (out / "main_table.md").read_text()


def test_prices_file_reprices_from_usage(tmp_path, two_runs):
    prices = tmp_path / "prices.yaml"
    prices.write_text("scripted/gold: {input: 1, output: 2, cache_read: 0.1, cache_write: 1}\n")
    out = tmp_path / "report"
    report_cli(str(two_runs[0]), "--out", str(out), "--prices", str(prices))
    usage = [m["usage"] for m in metadata(two_runs[0])]
    expected = sum(u["input_tokens"] + 2 * u["output_tokens"] + 0.1 * u["cache_read_tokens"]
                   + u["cache_write_tokens"] for u in usage) / 1e6
    (row,) = read_csv(out / "main_table.csv")
    assert float(row["Cost ($)"]) == pytest.approx(expected)


def test_bad_input_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="not a directory"):
        report_cli(str(tmp_path / "missing"))
    (tmp_path / "empty" / "instances").mkdir(parents=True)
    with pytest.raises(UserError, match="no finished instance"):
        report_cli(str(tmp_path / "empty"))
    (tmp_path / "nothing").mkdir()
    with pytest.raises(UserError, match="holds no benchmark run"):
        report_cli(str(tmp_path / "nothing"))
    with pytest.raises(UserError, match="at least one run directory"):
        report_cli()
    bad_prices = tmp_path / "p.yaml"
    bad_prices.write_text("m: {input: 1}")
    run = make_run(tmp_path, "r", "openclaw", {0})
    with pytest.raises(UserError, match="at least `input` and `output`"):
        report_cli(str(run), "--prices", str(bad_prices))


# ---- the published numbers -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def data():
    return json.loads(PUBLISHED_RESULTS.read_text())


@pytest.fixture(scope="module")
def published_out(tmp_path_factory):
    out = tmp_path_factory.mktemp("published")
    assert report_cli("--published", "--out", str(out)) == 0
    return out


def test_table3_frontier_is_the_papers(data):
    columns = published.table_columns(data, "table3")
    front = pareto_front([(c.cost_usd, c.pass_at_1) for c in columns])
    on_front = {columns[i].key for i in front}
    assert on_front == {("GenericAgent", "Qwen 3.6-flash"), ("ZeroClaw", "Qwen 3.6-flash"),
                        ("OpenClaw", "Qwen 3.6-flash"), ("OpenClaw", "GLM 5.1")}
    assert ("Hermes-Agent", "GLM 5.1") not in on_front and ("ZeroClaw", "GLM 5.1") not in on_front
    # in order of cost, the frontier climbs
    scores = [columns[i].pass_at_1 for i in front]
    assert scores == sorted(scores)


def test_pareto_front_definition():
    points = [(1, 0.5), (2, 0.5), (2, 0.7), (3, 0.6), (0.5, 0.1), (2, 0.7)]
    assert pareto_front(points) == [4, 0, 2, 5]  # equal points do not dominate each other


@pytest.mark.parametrize("table, key", [("table2", "table2_openclaw_x_models"), ("table3", "table3_claws_x_models")])
def test_regenerated_tables_match_the_published_numbers(published_out, data, table, key):
    rows = read_csv(published_out / f"{table}.csv")
    langs = read_csv(published_out / f"{table}_per_language.csv")
    assert len(rows) == len(data[key])
    for row, lang_row, src in zip(rows, langs, data[key]):
        assert (row["Harness"], row["Model"].removesuffix(" †")) == (src["claw"], src["model"])
        assert int(row["Resolved"]) == src["resolved"]
        assert round(float(row["Pass@1 (%)"]), 1) == src["pass_at_1"]
        assert round(float(row["Cost ($)"]), 1) == src["total_cost_usd"]  # three are given to the cent in prose
        assert float(row["Mean duration (s)"]) == src["avg_duration_s"]
        assert "Input tokens" in row and "Output tokens" in row  # the paper's In/Out columns
        for column, field in (("Cache hit (%)", "cache_hit_pct"), ("Mean turns", "avg_turns")):
            if src[field] is None:
                assert row.get(column, "") == ""
            else:
                assert float(row[column]) == pytest.approx(src[field])
        for lang, pct in src["per_language_pass_at_1"].items():
            assert round(float(lang_row[lang]), 1) == pct
        assert round(float(lang_row["All"]), 1) == src["pass_at_1"]
        assert row["Model"].endswith(" †") == src["post_paper"]


def test_published_report_draws_figure1(published_out):
    for name in ("figure1_pareto.png", "figure1_pareto.svg", "table3_per_language.png", "index.html",
                 "table2.md", "table3.md", "table3_per_language.md"):
        assert (published_out / name).stat().st_size > 0, name
    md = (published_out / "table3.md").read_text()
    assert re.search(r"\| OpenClaw \| GLM 5\.1 \| 257 \| 350 \| 73\.4 \|", md)


def test_published_costs_print_at_the_papers_precision_and_post_paper_rows_stay_off_the_frontier(published_out):
    """Issue 13 §8: $85.84, $49.26, $71.47 as the paper's prose gives them, other costs to the $0.1 of its
    tables; GLM 5.2 (post-paper) is marked and not part of the paper's frontier unless asked."""
    from pytest_clawswe.swe.report import plots, published

    md3 = (published_out / "table3.md").read_text()
    for cost in ("| 85.84 |", "| 49.26 |", "| 71.47 |", "| 277.0 |", "| 768.8 |"):
        assert cost in md3, cost
    assert "| 85.80 |" not in md3 and "| 277.00 |" not in md3
    md2 = (published_out / "table2.md").read_text()
    assert "| 1,399.1 |" in md2 and "GLM 5.2 †" in md2 and "| Input tokens | Output tokens |" in md2
    points, _ = plots.points_from_columns(published.table_columns(published.load_published(), "table2"))
    assert "GLM 5.2" not in [p.model for p in plots.frontier(points)]
    assert "GLM 5.1" in [p.model for p in plots.frontier(points)]  # no longer dominated by a post-paper row
    assert "GLM 5.2" in [p.model for p in plots.frontier(points, with_post_paper=True)]
    import html as html_text  # the report escapes the apostrophe

    assert "not part of the paper's frontier" in html_text.unescape((published_out / "index.html").read_text())
