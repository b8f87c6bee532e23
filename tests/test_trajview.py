"""The trajectory viewer: pages from ATIF trajectories, agent-written text shown as text, and the page in a
real headless Chromium (the WildClawBench task image's Debian Chromium, driven by Playwright)."""
import base64
import copy
import hashlib
import json
import os
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from chromium_run import run_in_chromium

from pytest_clawswe import cli
from pytest_clawswe.trajectory.view import render, viewer_link, write_viewers
from pytest_clawswe.trajectory.view.render import INDEX, TEMPLATES, viewer_links

DATA = Path(__file__).parent / "data" / "trajectories"
SWE = DATA / "trajectory-swe.json"
HOSTILE = DATA / "trajectory-wildclaw-hostile.json"
# the only elements and attributes our template writes: anything else in a page came from agent text
TAGS = {"html", "head", "meta", "title", "style", "body", "header", "div", "h1", "span", "b", "svg", "rect",
        "label", "input", "button", "main", "section", "h2", "details", "summary", "pre", "p", "article", "a",
        "time", "aside", "ul", "li", "table", "tr", "th", "td", "i", "footer", "script"}


def load(path):
    return json.loads(path.read_text())


class Elements(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attrs, self.scripts, self._in_script = [], [], [], False

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [name for name, _ in attrs]
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts.append(data)


def parsed(html):
    p = Elements()
    p.feed(html)
    return p


def test_swe_page_shows_steps_tokens_patch_and_tests():
    traj = load(SWE)
    html = render(traj)
    assert '<b id="step-count">7</b>' in html
    assert "Claude Code, Anthropic" in html  # the system prompt
    assert '<span class="fn">Bash</span>' in html and "Run a shell command in /testbed." in html  # a tool definition
    assert html.count('<article class="step') == 7
    assert html.count('class="part call"') == 6
    # the running total of the last step is every step's tokens and cost
    tokens = sum(s["metrics"]["prompt_tokens"] + s["metrics"]["completion_tokens"] for s in traj["steps"]
                 if "metrics" in s)
    assert f"Σ {tokens:,} tok · ${traj['final_metrics']['total_cost_usd']:.4f}" in html
    assert '<div class="d-add">+                    code = self.hex4(end + 2)</div>' in html
    assert '<div class="d-del">-                    chunks.append(chr(self.hex4(end + 2)))</div>' in html
    assert "FAIL_TO_PASS: <span class=\"ok\">3 passed</span>" in html
    assert "tests/test_decoder.py::test_surrogate_pair_escape" in html
    assert "9,105" in html  # a step's cache write tokens


def test_agent_written_markup_is_text_and_only_our_script_is_in_the_page():
    html = render(load(HOSTILE))
    page = parsed(html)
    assert set(page.tags) <= TAGS, set(page.tags) - TAGS
    assert not [a for a in page.attrs if a.startswith("on")]  # no event handler attribute got in
    ours = (TEMPLATES / "viewer.js").read_text()
    assert page.scripts == [ours]  # one script element, exactly ours: no </script> from the agent ended it early
    assert "&lt;script&gt;document.title=&#39;PWNED&#39;;window.__pwned=3&lt;/script&gt;" in html
    assert "&lt;/script&gt;&lt;script&gt;window.__pwned=7&lt;/script&gt;" in html  # tool arguments, not JSON
    assert "call_2&#34; onmouseover=&#34;window.__pwned=5" in html  # an id that tried to leave its attribute
    assert "{{ 7*7 }}" in html  # template syntax in agent text is not evaluated
    # the page's policy lets only that script run, by its hash
    digest = base64.b64encode(hashlib.sha256(ours.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in html and "default-src 'none'" in html


def test_wildclaw_page_shows_criteria_score_and_the_cut():
    html = render(load(HOSTILE))
    assert 'id="criteria"' in html and "blockers_listed" in html and "0.60" in html
    assert "score 0.90" in html and "attempt 2" in html
    assert "Cut to the recording cap" in html and "bytes_cut" in html
    assert 'id="patch"' not in html  # a task has no patch


def test_sparse_and_odd_trajectories_render():
    """Other producers leave fields out or give other shapes: the page never fails on them."""
    assert 'id="step-count">0<' in render({"schema_version": "ATIF-v1.7", "steps": []})
    odd = {"schema_version": "ATIF-v1.5", "agent": {"name": "x", "tool_definitions": [{"name": "t"}, "junk"]},
           "steps": [{"step_id": 1, "source": "weird", "message": [{"type": "text", "text": "part one"},
                                                                    {"type": "image"}]},
                     {"step_id": 2, "source": "agent", "tool_calls": [{"function_name": "f", "arguments": "[1, 2]"}],
                      "observation": {"results": [{"content": "stray output"}]},
                      "metrics": {"prompt_tokens": 5}}]}
    html = render(odd)
    assert "part one\n[image]" in html and "stray output" in html and "cost <b id=\"total-cost\">—" in html
    with pytest.raises(ValueError, match="no list of steps"):
        render({"schema_version": "ATIF-v1.7"})


def test_a_failed_request_shows_its_failure_and_what_the_record_cut():
    """The recorder's step extra.gateway (failure kind, the provider's words, the cut) is shown, as text."""
    traj = {"schema_version": "ATIF-v1.8", "agent": {"name": "clawswe-gateway"}, "steps": [
        {"step_id": 1, "source": "agent", "message": "",
         "metrics": {"prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0},
         "extra": {"clawswe": {"latency_s": 0.2, "cache_write_tokens": 0, "request_id": "r1", "status": 429},
                   "gateway": {"failure": "rate_limit", "reason": "slow down <b>now</b>",
                               "cut": {"request_bytes": 70000}, "stop": "error"}}}]}
    html = render(traj)
    assert '<div class="part problem">rate_limit · slow down &lt;b&gt;now&lt;/b&gt;</div>' in html
    assert "HTTP 429" in html and "the record cut this call" in html and "request_bytes" in html


def make_run(tmp_path):
    run = tmp_path / "run"
    first, second = load(SWE), copy.deepcopy(load(SWE))
    second["extra"]["clawswe"]["attempt"] = 2
    files = {run / "instances" / "clawswe__tinyjson-py-12" / "trajectory-1.json": first,
             run / "instances" / "clawswe__tinyjson-py-12" / "trajectory-2.json": second,
             run / "trajectories" / "task.atif.json": load(HOSTILE),
             run / "instances" / ".running" / "trajectory-1.json": first,  # an item still running
             run / "instances" / "x" / "eval" / "report.json": {"not": "atif"}}
    for path, data in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data))
    (run / "trajectories" / "broken.json").write_text("{")
    return run


def test_write_viewers_pages_every_trajectory_of_a_run_and_links_the_last_attempt(tmp_path):
    run = make_run(tmp_path)
    assert viewer_link(run, "clawswe__tinyjson-py-12") is None  # no page written yet
    rows = write_viewers(run)
    assert [(r["item_id"], r["attempt"]) for r in rows] == [
        ("03_Social_Interaction_task_3_release_blockers", 2), ("clawswe__tinyjson-py-12", 1),
        ("clawswe__tinyjson-py-12", 2)]
    assert (run / "instances" / "clawswe__tinyjson-py-12" / "trajectory-2.html").is_file()
    assert (run / "trajectories" / "task.html").is_file()
    assert not (run / "instances" / ".running" / "trajectory-1.html").exists()
    assert viewer_link(run, "clawswe__tinyjson-py-12") == "instances/clawswe__tinyjson-py-12/trajectory-2.html"
    assert viewer_link(run, "clawswe__tinyjson-py-12", attempt=1).endswith("trajectory-1.html")
    assert viewer_link(run, "nope") is None
    assert len(viewer_links(run)) == 2
    index = (run / INDEX).read_text()
    assert 'href="instances/clawswe__tinyjson-py-12/trajectory-1.html"' in index and "task.html" in index


def test_clawswe_view_command(tmp_path, capsys):
    run = make_run(tmp_path)
    assert cli.main(["view", str(run)]) == 0
    assert "3 trajectory pages" in capsys.readouterr().out
    out = tmp_path / "one.html"
    assert cli.main(["view", str(SWE), "--out", str(out)]) == 0 and "step-count" in out.read_text()
    assert cli.main(["view", str(tmp_path / "missing")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert cli.main(["view", str(tmp_path / "empty")]) == 2
    assert "holds no trajectory files" in capsys.readouterr().err
    assert cli.main(["view", str(run / "instances" / "x" / "eval" / "report.json")]) == 2
    assert "is not an ATIF trajectory" in capsys.readouterr().err


@pytest.mark.docker
def test_pages_in_headless_chromium(docker_client, tmp_path):
    """The pages in Debian's Chromium: they render, the toggles and search work by clicking, and nothing the
    agent wrote runs (it would set document.title or window.__pwned)."""
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "swe.html").write_text(render(load(SWE)))
    (pages / "hostile.html").write_text(render(load(HOSTILE)))
    seen = run_in_chromium(docker_client, "chromium_view.py", pages, ["/pages"], "none", "trajview", timeout=300,
                           log_chars=100_000)
    swe, host = seen["swe"], seen["hostile"]
    assert swe["step_count"] == "7" and swe["steps"] == 7
    assert swe["title"].startswith("clawswe__tinyjson-py-12")
    assert swe["diff_add"] > 5 and "3 passed" in swe["tests"]
    assert swe["reasoning_before"] == 2 and swe["reasoning_after"] == 0  # the reasoning toggle hides them
    assert swe["calls_open_before"] == 0 and swe["calls_open_after"] == 6  # expand all opens the tool calls
    assert swe["outputs_shown"] == 6 and swe["outputs_hidden"] == 0
    assert swe["steps_without_setup"] == 5  # the system and user steps hidden
    assert swe["search_count"] == "4 of 7 steps" and swe["steps_matching"] == 4  # issue, 2 reasonings, answer
    assert host["title"].startswith("03_Social_Interaction_task_3_release_blockers")  # not PWNED
    assert host["pwned"] == "undefined" and host["pwned_after_hover"] == "undefined"
    assert host["scripts"] == 1 and host["imgs"] == 0
    assert "<script>document.title='PWNED';window.__pwned=3</script>" in host["text"]  # shown as text
    assert '</script><script>document.title="PWNED"' in host["text"]
    assert "<script>window.__pwned=9</script>" in host["criteria"]
    assert "<script>window.__pwned=8</script>" in host["setup"]
    assert "dialogs" not in seen
    assert [u for u in seen["requests"] if not u.startswith("file://")] == []  # no network
    assert not [m for m in seen["console"] if m.startswith("error")], seen["console"]
    for shot in ("swe-top.png", "swe-search.png", "hostile.png"):
        assert (pages / shot).stat().st_size > 10_000


def test_both_reports_link_each_items_trajectory_page(tmp_path):
    """The page the runner writes beside an item's last trajectory is the report's "trajectory" link."""
    from test_report import make_run as make_swe_run
    from test_wildclaw import copy_real_run

    from pytest_clawswe.cli import main
    from pytest_clawswe.trajectory.view import item_page, write_viewer

    swe = make_swe_run(tmp_path / "runs", "swe-run", "claude-code", {0}, n=2)
    wild = copy_real_run(tmp_path)
    folders = [swe / "instances" / "demo__task-0", next(p for p in (wild / "tasks").iterdir() if p.is_dir())]
    for folder, fixture in zip(folders, (SWE, HOSTILE)):
        for attempt in (1, 2):  # the report links the last attempt's page
            target = folder / "trajectory" / f"attempt-{attempt}.atif.json"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(fixture, target)
            assert write_viewer(target) == target.with_name(f"attempt-{attempt}.html")
        assert item_page(folder).name == "attempt-2.html"
    assert not item_page(swe / "instances" / "demo__task-1").exists()  # none recorded: no link
    for run, folder in zip((swe, wild), folders):
        out = tmp_path / f"report-{run.name}"
        assert main(["report", str(run), "--out", str(out)]) == 0
        page = (out / "index.html").read_text()
        href = Path(os.path.relpath(folder / "trajectory" / "attempt-2.html", out)).as_posix()
        assert f'href="{href}">trajectory</a>' in page, href
        assert page.count(">trajectory</a>") == 1
