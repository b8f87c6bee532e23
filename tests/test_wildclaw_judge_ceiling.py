"""--max-instance-cost is the agent's ceiling: the judge's token grades under none (the released runner caps no judge),
so its calls are never refused by the agent's ceiling and its spending is its own. A real gateway process forwards to
the judge's provider stand-in (tests/judge_provider.py, OpenRouter's wire at OPENROUTER_BASE_URL); no Docker."""
from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from gateway_stub import gateway_with_env  # noqa: E402
from judge_provider import USAGE, JudgeProvider  # noqa: E402

from pytest_clawswe.gateway.control.run_gateway import RunGateway
from pytest_clawswe.model import Model
from pytest_clawswe.wildclaw.options import judge_model
from pytest_clawswe.wildclaw.task_runner import TaskRunner

CRITERION = "criterion: summary_quality"
# as ItemRunner sets it for --max-instance-cost 0.001 on a model at $1/$10 per million tokens: one judge-sized call
# (1500 in, 60 out: $0.0021) is past it
CEILING = {"usd": 0.001, "prices": [1e-6, 1e-5, 0.0, 0.0]}


def ask(url: str, token: str, model: str) -> int:
    body = {"model": model, "messages": [{"role": "user", "content": f"Score this. {CRITERION}"}]}
    request = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=60) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.fixture
def runner(tmp_path):
    """A task runner's gateway side: its run's gateway with the agent's ceiling, as a run with --max-instance-cost."""
    with JudgeProvider({CRITERION: 0.5}) as provider, gateway_with_env(
            tmp_path / "gateway", [], {"OPENROUTER_BASE_URL": provider.url + "/v1", "OPENROUTER_API_KEY": "sk-or-x"}):
        runner = TaskRunner.__new__(TaskRunner)  # no harness, no engine: only its tokens are used here
        runner.gateway = RunGateway(tmp_path / "gateway", Model.scripted("gold"), harness="claude-code")
        runner.gateway.ceiling = CEILING
        yield runner, provider


def test_the_judge_is_not_stopped_by_the_agents_ceiling(runner):
    runner, provider = runner
    judge = judge_model("openai/gpt-5.4")
    token = runner.register_judge("t1", judge, None)
    assert [ask(runner.gateway.url, token, "openai/gpt-5.4") for _ in range(3)] == [200, 200, 200]
    assert len(provider.calls_for(CRITERION)) == 3
    assert runner.gateway.client.usage(token).input_tokens == 3 * USAGE.input_tokens  # counted, as the judge's
    # the agent's own token, same model, same ceiling: refused once past it (the ceiling is in force here)
    agent = runner._register("t1", judge, None)
    assert [ask(runner.gateway.url, agent, "openai/gpt-5.4") for _ in range(2)] == [200, 400]
    assert len(provider.calls_for(CRITERION)) == 4
