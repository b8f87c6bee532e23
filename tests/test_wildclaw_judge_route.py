"""The real (non-scripted) judge route of WildClawBench, end to end: real Docker, the real Claude Code harness on the
scripted model as usual, and `--judge-model openai/gpt-5.4` (the released default judge) sent where the released
runner sends it, OpenRouter, through the run's gateway on the judge's own token. The only stand-in is the judge's
provider (tests/judge_provider.py: OpenRouter's Chat Completions wire, reached at OPENROUTER_BASE_URL as the real
one would be), answering the graders' prompts with scores the test chooses, other than the scripted judge's (1.0 for
both demo criteria), so no assertion here can pass on the scripted path.

- The demo's judged task (a text judge) and its vision-judged one: the scores are the stand-in's; what it received is
  the graders' requests (the model name OpenRouter knows, the judge prompt with the agent's summary, the agent's
  contact sheet as an image), with the provider's key and never a gateway token; the judge's tokens and cost are
  counted as the judge's, apart from the agent's; the agent's own model call naming the same model, on its own
  token, never reached the judge's provider.
- A grader whose client streams (tests/data/wildclaw-judge) gets the judge's answer streamed, its usage counted.
- `clawswe regrade RUN --judge-model openai/gpt-5.4` (README) grades a run the scripted judge graded again through the
  judge's provider, after the key check; a key the provider refuses stops it before anything is written.
- A judge key the provider refuses stops the run at the start (the key check, as for the agents' model). A provider
  that refuses the judge (401) later makes the task an error whose sentence says what to do, never a 0; a 500
  is retried by the grader's client (as against OpenRouter) and the task graded on the answer that followed; a
  judge that never answers ends in the grader's time limit, an error.
"""
from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from judge_provider import HANG, PROVIDER_COST, USAGE, JudgeProvider, image_urls, prompt_text  # noqa: E402
from test_wildclaw_run import bundle, results  # noqa: E402
from run_containers import left_containers  # noqa: E402

pytestmark = [pytest.mark.docker, pytest.mark.harness]

SLOTS = "01_Productivity_Flow_task_1_meeting_slots"  # summary_quality, judged from the summary's text (weight 0.2)
SHEET = "05_Creative_Synthesis_task_1_clip_contact_sheet"  # sheet_judged, judged from the image (weight 0.2)
SUMMARY, CONTACT = "criterion: summary_quality", "criterion: contact_sheet"  # in each grader's judge prompt
SCORES = {SUMMARY: 0.75, CONTACT: 0.4}  # the scripted judge's answers: 1.0 and 1.0
JUDGE = "openai/gpt-5.4"  # as released; the gateway sends it to OpenRouter under this name
KEY = "sk-or-JUDGE-KEY-MUST-NOT-LEAK"
PRICE = {"input": 2.0, "output": 10.0}  # USD per million tokens, given with --prices


@pytest.fixture
def provider(monkeypatch, docker_client):
    bundle(docker_client, "claude-code")
    with JudgeProvider(dict(SCORES)) as stand_in:
        monkeypatch.setenv("OPENROUTER_BASE_URL", stand_in.url + "/v1")
        monkeypatch.setenv("OPENROUTER_API_KEY", KEY)
        yield stand_in


def run_judged(pytester, run_dir: Path, select: str, *args):
    prices = run_dir.parent / f"{run_dir.name}-prices.yaml"
    prices.write_text(f"{JUDGE}: {json.dumps(PRICE)}\n")
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "--benchmark", "wildclaw", "--dataset", "demo",
                                         "--harness", "claude-code", "--model", "scripted/gold", "--judge-model",
                                         JUDGE, "--prices", str(prices), "--run-dir", str(run_dir), "-k", select,
                                         *args, timeout=1800)


def test_a_real_judge_grades_through_its_provider(pytester, tmp_path, provider, docker_client):
    run_dir = tmp_path / "run"
    done = run_judged(pytester, run_dir, "meeting_slots or clip_contact_sheet", "-n", "2")
    got = results(run_dir)
    assert done.ret == 0, (got, done.stdout.str()[-3000:])
    # the stand-in's scores, in each grader's own weights
    assert got[SLOTS]["scores"]["summary_quality"] == 0.75 and got[SLOTS]["overall_score"] == 0.95, got[SLOTS]
    assert got[SHEET]["scores"]["sheet_judged"] == 0.4 and got[SHEET]["overall_score"] == 0.88, got[SHEET]
    assert got[SHEET]["scores"]["description"] == 1.0  # the agent's own model call was answered (scripted vision)

    seen = list(provider.seen)
    # the judge's provider got the key check's one-token request (before any task) and the graders' two requests,
    # nothing else: the agent's own model call named the same model on its own token ("What is in this contact
    # sheet?") and stayed on the agent's route
    check, *graders = seen
    assert check["body"]["max_tokens"] == 1 and check["body"]["model"] == JUDGE, seen
    assert len(graders) == 2 and {len(provider.calls_for(SUMMARY)), len(provider.calls_for(CONTACT))} == {1}, seen
    for s in seen:
        assert s["path"] == "/v1/chat/completions"
        assert s["headers"]["authorization"] == f"Bearer {KEY}"  # the provider's key, not the judge's token
        assert "clawswe-" not in json.dumps(s["headers"]) + json.dumps(s["body"])
    assert all(s["body"]["model"] == JUDGE and s["body"]["temperature"] == 0 for s in graders)
    (slots,) = provider.calls_for(SUMMARY)
    summary = (run_dir / "tasks" / SLOTS / "snapshot" / "tmp_workspace" / "results" / "summary.md").read_text()
    assert summary.strip() and summary in prompt_text(slots["body"]) and not image_urls(slots["body"])
    (sheet,) = provider.calls_for(CONTACT)
    (url,) = image_urls(sheet["body"])
    png = run_dir / "tasks" / SHEET / "snapshot" / "tmp_workspace" / "results" / "contact_sheet.png"
    assert url == "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode()

    from pytest_clawswe.gateway.record.ledger import read_records

    for task_id in (SLOTS, SHEET):
        r = got[task_id]
        # the judge's tokens and cost are the judge's: what the provider reported, priced with --prices
        assert r["judge_usage"] == {"requests": 1, "input_tokens": USAGE.input_tokens,
                                    "output_tokens": USAGE.output_tokens, "cache_read_tokens": 0,
                                    "cache_write_tokens": 0}, r
        judge_cost = (USAGE.input_tokens * PRICE["input"] + USAGE.output_tokens * PRICE["output"]) / 1e6
        assert r["judge_cost_usd"] == pytest.approx(judge_cost) and r["cost_usd"] == 0.0  # the agent's: scripted
        # beside ours, what the judge's provider said it billed (OpenRouter's usage.cost); the agent's has none
        assert r["judge_provider_cost_usd"] == PROVIDER_COST and r["provider_cost_usd"] is None, r
        usage = json.loads((run_dir / "tasks" / task_id / "usage.json").read_text())
        assert usage["judge"]["model"] == JUDGE and usage["judge"]["input_tokens"] == USAGE.input_tokens
        assert usage["judge"]["provider_cost_usd"] == PROVIDER_COST
        assert usage["input_tokens"] == r["usage"]["input_tokens"]  # the agent's totals hold none of the judge's
        (record,) = read_records(run_dir / "gateway", f"{task_id}.judge")
        assert record["model"] == f"openrouter/{JUDGE}" and record["requested_model"] == JUDGE
        assert record["provider_cost_usd"] == PROVIDER_COST and record["status"] == 200
        agent = read_records(run_dir / "gateway", task_id) + read_records(run_dir / "gateway", f"{task_id}.tools")
        assert agent and {a["model"] for a in agent} <= {"scripted/gold", "scripted/vision"}
    summary_json = json.loads((run_dir / "summary.json").read_text())
    assert summary_json["judge_tokens"] == 2 * (USAGE.input_tokens + USAGE.output_tokens)
    assert not [p for p in run_dir.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert not left_containers(docker_client, run_dir)


def test_a_judge_provider_failure_is_an_error_or_retried(pytester, tmp_path, provider, docker_client):
    provider.failures = {SUMMARY: [401] * 3, CONTACT: [500]}
    run_dir = tmp_path / "run"
    done = run_judged(pytester, run_dir, "meeting_slots or clip_contact_sheet", "-n", "2")
    got = results(run_dir)
    assert done.ret == 1, (got, done.stdout.str()[-3000:])
    done.stdout.fnmatch_lines(["*1 passed*1 error*"])
    # 401: an error, with what to do, never a score
    r = got[SLOTS]
    assert r["outcome"] == "error" and r["overall_score"] is None, r
    assert "401" in r["error"] and "OPENROUTER_API_KEY" in r["error"] and "--resume" in r["error"], r["error"]
    assert not (run_dir / "tasks" / SLOTS / "score.json").exists()
    assert len(provider.calls_for(SUMMARY)) == 1  # a refused key is not retried (the OpenAI client's rule)
    # 500: the grader's client asked again, and the task is graded on the answer that came
    r = got[SHEET]
    assert r["outcome"] == "passed" and r["scores"]["sheet_judged"] == 0.4, r
    assert len(provider.calls_for(CONTACT)) == 2 and r["judge_usage"]["requests"] == 1
    assert json.loads((run_dir / "summary.json").read_text())["errors"] == 1
    assert not left_containers(docker_client, run_dir)


def test_a_judge_key_the_provider_refuses_stops_the_run_before_any_task(pytester, tmp_path, provider):
    """The judge is checked at the start as the agents' model is: a key the judge's provider refuses (set, but wrong)
    was found only at the first task's grading, after its agent had worked, and then at every task's."""
    provider.failures = {"": [401]}  # the key check's request holds no criterion
    run_dir = tmp_path / "run"
    done = run_judged(pytester, run_dir, "meeting_slots", "-n", "0")
    err = done.stderr.str()
    assert done.ret == pytest.ExitCode.USAGE_ERROR, done.stdout.str()[-3000:] + err[-2000:]
    assert f"the model check failed: the judge openrouter/{JUDGE} at openrouter" in err and "401" in err, err[-2000:]
    assert "--no-model-check" in err
    assert not (run_dir / "tasks").exists() and len(provider.seen) == 1  # no agent ran, no grader asked


def test_a_judge_that_never_answers_is_an_error(pytester, tmp_path, provider, docker_client):
    provider.failures = {SUMMARY: [HANG]}
    run_dir = tmp_path / "run"
    # the time limit leaves a loaded machine room to start the grader and reach its judge call
    done = run_judged(pytester, run_dir, "meeting_slots", "-n", "0", "--grade-timeout", "60")
    assert done.ret == 1, done.stdout.str()[-3000:]
    (r,) = results(run_dir).values()
    assert r["outcome"] == "error" and r["overall_score"] is None, r
    assert "60 s" in r["error"] and "--grade-timeout" in r["error"], r["error"]
    assert len(provider.calls_for(SUMMARY)) == 1, (r, provider.seen)
    assert not left_containers(docker_client, run_dir)


STREAMED = "01_Productivity_Flow_task_1_streamed_judge"  # its grader asks its judge with stream=True
STREAMED_SET = Path(__file__).parent / "data" / "wildclaw-judge"
NOTE = "criterion: note_quality"


def test_a_grader_that_streams_gets_the_judge_streamed(pytester, tmp_path, provider, docker_client):
    provider.scores[NOTE] = 0.6
    run_dir = tmp_path / "run"
    prices = tmp_path / "prices.yaml"
    prices.write_text(f"{JUDGE}: {json.dumps(PRICE)}\n")
    done = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--benchmark", "wildclaw", "--dataset",
                                         str(STREAMED_SET), "--harness", "claude-code", "--model", "scripted/gold",
                                         "--judge-model", JUDGE, "--prices", str(prices), "--run-dir", str(run_dir),
                                         "-n", "0", timeout=1200)
    (r,) = results(run_dir).values()
    assert done.ret == 0, (r, done.stdout.str()[-3000:])
    assert r["scores"] == {"note_written": 1.0, "note_quality": 0.6, "overall_score": 0.8}, r
    (call,) = provider.calls_for(NOTE)
    # streamed to the provider as the grader asked; the gateway asked for the usage chunk on its behalf
    assert call["body"]["stream"] is True and call["body"]["stream_options"] == {"include_usage": True}
    assert call["body"]["model"] == JUDGE and call["headers"]["authorization"] == f"Bearer {KEY}"
    assert r["judge_usage"]["requests"] == 1 and r["judge_usage"]["input_tokens"] == USAGE.input_tokens
    assert r["judge_usage"]["output_tokens"] == USAGE.output_tokens
    assert r["judge_provider_cost_usd"] == PROVIDER_COST  # from the streamed answer's last usage chunk
    from pytest_clawswe.gateway.record.ledger import read_records

    (record,) = read_records(run_dir / "gateway", f"{STREAMED}.judge")
    assert record["stream"] is True and record["provider_cost_usd"] == PROVIDER_COST
    assert not left_containers(docker_client, run_dir)


def test_a_run_judged_offline_is_graded_again_by_the_real_judge(pytester, tmp_path, provider, docker_client):
    """README's `clawswe regrade RUN --judge-model openai/gpt-5.4`: a run the scripted judge graded, graded again
    through the judge's provider after the key check; a key the provider refuses stops it before anything."""
    from test_regrade import clawswe

    run_dir = tmp_path / "run"
    prices = tmp_path / "prices.yaml"
    prices.write_text(f"{JUDGE}: {json.dumps(PRICE)}\n")
    done = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--benchmark", "wildclaw", "--dataset", "demo",
                                         "--harness", "claude-code", "--model", "scripted/gold", "--judge-model",
                                         "scripted", "--prices", str(prices), "--run-dir", str(run_dir), "-k",
                                         "meeting_slots", "-n", "0", timeout=1200)
    assert done.ret == 0, done.stdout.str()[-3000:]
    assert results(run_dir)[SLOTS]["scores"]["summary_quality"] == 1.0 and not provider.seen  # the scripted judge

    provider.failures = {"": [401]}  # the key check's request holds no criterion
    refused = clawswe("regrade", str(run_dir), "--out", str(tmp_path / "refused"), "--judge-model", JUDGE, "-n", "0",
                      cwd=tmp_path)
    assert refused.returncode != 0 and "401" in refused.stdout + refused.stderr, refused.stdout[-2000:]
    assert not (tmp_path / "refused" / "tasks").exists() and len(provider.seen) == 1

    out = tmp_path / "out"
    again = clawswe("regrade", str(run_dir), "--out", str(out), "--judge-model", JUDGE, "--prices", str(prices), "-n",
                    "0", cwd=tmp_path)  # a regrade's prices are its own
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-2000:]
    r = results(out)[SLOTS]
    assert r["judge_model"] == JUDGE and r["scores"]["summary_quality"] == 0.75 and r["overall_score"] == 0.95, r
    assert r["judge_usage"]["input_tokens"] == USAGE.input_tokens and r["judge_usage"]["requests"] == 1
    assert r["judge_cost_usd"] == pytest.approx((USAGE.input_tokens * PRICE["input"]
                                                 + USAGE.output_tokens * PRICE["output"]) / 1e6)
    (judged,) = provider.calls_for(SUMMARY)
    assert judged["headers"]["authorization"] == f"Bearer {KEY}" and judged["body"]["model"] == JUDGE
    assert not left_containers(docker_client, out)
