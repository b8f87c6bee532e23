"""What the Node adapters read from their CLI's output (claude-code's JSON result, openclaw's JSON, codex's JSONL
events): why a run failed, and the harness's own usage. Pure parsing, no container."""
from __future__ import annotations

from pytest_clawswe.harness.adapters import claude_code, codex, openclaw


def test_claude_code_failure_and_usage():
    assert claude_code.failure(None) == "claude printed no JSON result"
    assert claude_code.failure({"is_error": True, "api_error_status": 429}) == "claude ended with 429"
    assert claude_code.failure({"subtype": "error_during_execution"}) == "claude ended with error_during_execution"
    assert claude_code.failure({"is_error": True, "result": "x" * 400}) == ("claude ended with " + "x" * 400)[:300]
    assert claude_code.failure({"subtype": "success"}) == ""
    data = {"usage": {"input_tokens": "12", "output_tokens": 5, "cache_read_input_tokens": 100,
                      "cache_creation_input_tokens": None}, "num_turns": 3, "subtype": "success",
            "stop_reason": "end_turn", "total_cost_usd": 0.25}
    assert claude_code.harness_usage(data) == {
        "input_tokens": 12, "output_tokens": 5, "cache_read_tokens": 100, "cache_write_tokens": 0, "turns": 3,
        "subtype": "success", "stop_reason": "end_turn", "cost_usd": 0.25}
    assert claude_code.harness_usage(None) == {}


def test_openclaw_failure_and_usage():
    assert openclaw.failure(None) == "openclaw printed no JSON result"
    assert openclaw.failure({"ok": False, "error": {"type": "cli_error", "message": "HTTP 401"}}) == \
        "openclaw failed: HTTP 401"
    assert openclaw.failure({"ok": False, "error": "boom"}) == "openclaw failed: boom"
    assert openclaw.failure({"ok": False}) == "openclaw failed: no reason given"
    assert openclaw.failure({"meta": {"aborted": True, "errorMessage": "cut"}}) == "openclaw's run ended with cut"
    assert openclaw.failure({"meta": {"completion": {"stopReason": "error"}}}) == "openclaw's run ended with error"
    assert openclaw.failure({"ok": False, "error": "e" * 400}) == ("openclaw failed: " + "e" * 400)[:300]
    assert openclaw.failure({"meta": {"stopReason": "stop"}}) == ""
    data = {"meta": {"agentMeta": {"usage": {"input": 7, "output": "2", "cacheRead": 30, "cacheWrite": 4,
                                             "cost": {"total": 0.5}}, "assistantTurns": 2},
                     "toolSummary": {"calls": 6}, "stopReason": "stop"}}
    assert openclaw.harness_usage(data) == {
        "input_tokens": 7, "output_tokens": 2, "cache_read_tokens": 30, "cache_write_tokens": 4, "turns": 2,
        "tool_calls": 6, "stop_reason": "stop", "cost_usd": 0.5}
    assert openclaw.harness_usage({"meta": {}})["usage_reported"] is False


def test_codex_failure():
    done = {"type": "turn.completed", "usage": {}}
    assert codex.failure([{"type": "turn.failed", "error": {"message": "quota"}}]) == "codex's turn failed: quota"
    assert codex.failure([{"type": "turn.failed", "error": {}}]) == "codex's turn failed: no reason given"
    assert codex.failure([{"type": "error", "message": "Reconnecting... 1/5"}]) == \
        "codex completed no turn: Reconnecting... 1/5"
    assert codex.failure([]) == "codex completed no turn"
    assert codex.failure([{"type": "error", "message": "Reconnecting... 1/5"}, done]) == ""
