"""WildClawBench without Docker: the task-file parser and its refusals, collection and markers, the scripted
solution model and judge, the transcript built from the gateway's record, and the run-level files."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from pytest_clawswe.gateway.protocols import CHAT, MESSAGES, RESPONSES, ToolSpec
from pytest_clawswe.gateway.scripted.solutions import ScriptedJudge, SolutionModel, scripted_for
from pytest_clawswe.gateway.scripted.responder import ScriptedModel
from pytest_clawswe.wildclaw import results as outputs
from pytest_clawswe.wildclaw.grading.grader import judge_failure
from pytest_clawswe.wildclaw.options import DEMO_DIR
from pytest_clawswe.wildclaw.task.file import DEFAULT_TIMEOUT_S, PROMPT_PREFIX, TaskFileError, parse_task, task_files
from pytest_clawswe.wildclaw.grading.transcript import from_calls, session_lines

GRADER = "## Automated Checks\n\n```python\ndef grade(**kwargs):\n    return {'overall_score': 1.0}\n```\n"
WORKSPACE = "## Workspace Path\n\n```\nworkspace/01_Productivity_Flow/task_1_x\n```\n"


def write(tmp_path: Path, text: str, name: str = "01_Productivity_Flow/01_Productivity_Flow_task_1_x.md") -> Path:
    path = tmp_path / "tasks" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def task_text(front: str = "id: t1\nname: A task\ncategory: Productivity Flow\ntimeout_seconds: 300\n"
                           "modality: pure-text\n", prompt: str = "Do the thing.\n") -> str:
    return f"---\n{front}---\n\n## Prompt\n\n{prompt}\n{GRADER}\n{WORKSPACE}"


# --- the parser -------------------------------------------------------------------------------------

def test_demo_tasks_parse_with_their_categories():
    tasks = [parse_task(p) for p in task_files(DEMO_DIR)]
    assert {t.category_marker for t in tasks} == {"productivity", "code", "social", "search", "creative", "safety"}
    for t in tasks:
        assert (DEMO_DIR / t.workspace_path / "exec").is_dir()
        assert (DEMO_DIR / t.workspace_path / "solution" / "solve.sh").is_file()
    assert any((DEMO_DIR / t.workspace_path / "judge.json").is_file() for t in tasks)  # a judged criterion


def test_services_are_declared_beside_exec_and_released_service_warmup_lines_move(tmp_path):
    from pytest_clawswe.wildclaw.services import plan as services

    social = next(parse_task(p) for p in task_files(DEMO_DIR) if "meeting_tz" in p.name)
    plan = services.plan(social, DEMO_DIR / social.workspace_path)
    assert plan.config["services"] == ["gmail", "calendar", "contacts"] and plan.moved == []
    assert not (DEMO_DIR / social.workspace_path / "exec" / "services").exists()  # never given to the agent

    line = ("export GMAIL_FIXTURES=/tmp_workspace/fixtures/inbox.json && "
            "python3 /tmp_workspace/mock_services/gmail/server.py &")
    ws_dir = tmp_path / "workspace" / "x"
    (ws_dir / "exec" / "fixtures").mkdir(parents=True)
    (ws_dir / "exec" / "fixtures" / "inbox.json").write_text('[{"message_id": "m1"}]')
    task = parse_task(write(tmp_path, task_text()))
    task.warmup = ["mkdir -p /tmp_workspace/results", line]
    plan = services.plan(task, ws_dir)
    assert plan.warmup == ["mkdir -p /tmp_workspace/results"]
    assert plan.moved == [{"line": line, "service": "gmail", "fixture": "/tmp_workspace/fixtures/inbox.json"}]
    assert plan.config["services"] == ["gmail"]
    assert plan.moved_files == [(ws_dir / "exec" / "fixtures" / "inbox.json", "gmail.json")]
    (ws_dir / "exec" / "fixtures" / "inbox.json").unlink()
    with pytest.raises(services.TaskSetupError, match="not in"):
        services.plan(task, ws_dir)


def test_released_defaults(tmp_path):
    """id from the file stem, 120 s, category from the folder, as the released parser does."""
    path = write(tmp_path, task_text(front="name: Only a name\n"), "06_Safety_Alignment/06_Safety_Alignment_task_5_x.md")
    task = parse_task(path)
    assert task.id == "06_Safety_Alignment_task_5_x"
    assert task.timeout_seconds == DEFAULT_TIMEOUT_S == 120
    assert task.category == "Safety Alignment" and task.category_marker == "safety"
    assert task.modality_marker == "pure_text"


def test_sections_unfenced_and_listed(tmp_path):
    text = task_text() + ("## Skills\n\n```\nsearch_tool\nocr\n```\n\n## Env\n\n```\nOPENROUTER_API_KEY\nLANG\n```\n\n"
                          "## Warmup\n\n```bash\npip install x\npython3 -m http.server 9000 &\n```\n")
    task = parse_task(write(tmp_path, text))
    assert task.skills == ["search_tool", "ocr"]
    assert task.env == ["OPENROUTER_API_KEY", "LANG"]
    assert task.warmup == ["pip install x", "python3 -m http.server 9000 &"]
    assert task.workspace_path == "workspace/01_Productivity_Flow/task_1_x"
    assert "def grade" in task.grader_code and "```" not in task.grader_code


def test_prompt_gets_the_released_prefix_with_the_budget(tmp_path):
    task = parse_task(write(tmp_path, task_text()))
    prompt = task.full_prompt()
    assert prompt.startswith(PROMPT_PREFIX.format(timeout_seconds=300))
    assert "before the timeout (300s)." in prompt and prompt.endswith("Do the thing.")


@pytest.mark.parametrize("text, problem", [
    ("## Prompt\n\nhi\n" + GRADER + WORKSPACE, "no YAML front matter"),
    ("---\nid: x\n---\n" + GRADER + WORKSPACE, "no '## Prompt' section"),
    ("---\nid: x\n---\n## Prompt\n\nhi\n" + GRADER, "no '## Workspace Path' section"),
    ("---\nid: x\n---\n## Prompt\n\nhi\n## Automated Checks\n\n```python\ndef check():\n    pass\n```\n" + WORKSPACE,
     "does not define grade(**kwargs)"),
    ("---\nid: x\n---\n## Prompt\n\nStep one.\n## Step two\n\nmore\n" + GRADER + WORKSPACE,
     "the prompt is cut by the line '## Step two'"),
    ("---\nid: [x\n---\n## Prompt\n\nhi\n" + GRADER + WORKSPACE, "not valid YAML"),
    ("---\ntimeout_seconds: soon\n---\n## Prompt\n\nhi\n" + GRADER + WORKSPACE, "timeout_seconds must be"),
])
def test_malformed_files_are_refused_in_one_sentence(tmp_path, text, problem):
    path = write(tmp_path, text)
    with pytest.raises(TaskFileError) as info:
        parse_task(path)
    message = str(info.value)
    assert message.startswith(str(path)) and problem in message
    assert "\n" not in message


def test_sixty_task_files_parse_in_under_a_second(tmp_path):
    categories = ["01_Productivity_Flow", "02_Code_Intelligence", "03_Social_Interaction", "04_Search_Retrieval",
                  "05_Creative_Synthesis", "06_Safety_Alignment"]
    body = (DEMO_DIR / "tasks" / "01_Productivity_Flow" / "01_Productivity_Flow_clawswe_demo_meeting_slots.md").read_text()
    for n in range(60):
        cat = categories[n % 6]
        write(tmp_path, body.replace("id: 01_Productivity_Flow_task_1_meeting_slots", f"id: {cat}_task_{n}"),
              f"{cat}/{cat}_task_{n}_x.md")
    start = time.perf_counter()
    tasks = [parse_task(p) for p in task_files(tmp_path)]
    elapsed = time.perf_counter() - start
    assert len(tasks) == 60 and elapsed < 1.0, elapsed


# --- collection through pytest ------------------------------------------------------------------------

def collect(pytester, *args):
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "--benchmark", "wildclaw", "--dataset", "demo",
                                         "--harness", "claude-code", "--model", "scripted/gold", "--collect-only",
                                         "-q", *args)


def test_markers_and_keywords_select_tasks(pytester):
    result = collect(pytester, "-m", "safety and not multimodal")
    result.stdout.fnmatch_lines(["*06_Safety_Alignment_task_1_history_credential*",
                                 "*06_Safety_Alignment_task_2_wipe_request*", "2*collected*"])
    result = collect(pytester, "-k", "rolling_window or meeting_slots")
    assert result.stdout.str().count("wildclaw-demo::") == 2
    result = collect(pytester, "-m", "productivity or code")
    assert result.stdout.str().count("wildclaw-demo::") == 2


def test_a_malformed_file_stops_collection_with_its_sentence(pytester, tmp_path):
    write(tmp_path, "## Prompt\n\nno front matter\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--benchmark", "wildclaw", "--dataset",
                                           str(tmp_path), "--harness", "claude-code", "--model", "scripted/gold",
                                           "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # a usage error, found before anything is written
    assert "no YAML front matter (the file must start with a '---' line)" in result.stderr.str()


def test_wildclaw_needs_a_dataset_folder(pytester):
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--benchmark", "wildclaw", "--harness",
                                           "claude-code", "--model", "scripted/gold", "--collect-only")
    assert result.ret != 0
    assert "--benchmark wildclaw needs --dataset PATH" in result.stderr.str()


# --- the scripted solution model and the scripted judge -----------------------------------------------

def chat_view(messages, tools=()):
    body = {"messages": messages, "tools": [{"type": "function", "function": {"name": t.name, "parameters": t.params}}
                                            for t in tools]}
    return CHAT.view(body)


BASH = ToolSpec("Bash", {"properties": {"command": {"type": "string"}}})


def act_out(model, tools=(BASH,), turns=20):
    """Play the harness: run the model until it answers without a tool call; (texts said, commands run)."""
    history, said, commands = [{"role": "user", "content": "task"}], [], []
    for turn in range(turns):
        reply = model.reply(chat_view(history, list(tools)))
        if reply.text:
            said.append(reply.text)
        if not reply.tool_calls:
            return said, commands
        call = reply.tool_calls[0]
        assert call.name == "Bash"
        commands.append(call.arguments["command"])
        history += [{"role": "assistant", "content": reply.text or None, "tool_calls": [
                        {"id": f"c{turn}", "type": "function",
                         "function": {"name": "Bash", "arguments": json.dumps(call.arguments)}}]},
                    {"role": "tool", "tool_call_id": f"c{turn}", "content": "ok"}]
    raise AssertionError("the model never finished")


def test_gold_acts_out_each_command_as_a_visible_tool_call_and_says_its_say_lines():
    script = ("#!/bin/bash\nset -euo pipefail\n# a comment\n"
              "#say rm -rf / would wipe the whole filesystem: I will not run it.\n"
              "ls /tmp_workspace/trash\n"
              "rm -rf /tmp_workspace/trash/old \\\n  /tmp_workspace/trash/older\n"
              "cat > /tmp_workspace/results/x <<'EOF'\nline one\n#say not a say line: inside a heredoc\nEOF\n"
              "if true; then\n  echo yes\nfi\n"
              "#say Deleted only the trash; nothing else.\n")
    said, commands = act_out(SolutionModel("gold", script))
    assert commands == ["ls /tmp_workspace/trash",
                        "rm -rf /tmp_workspace/trash/old \\\n  /tmp_workspace/trash/older",
                        "cat > /tmp_workspace/results/x <<'EOF'\nline one\n#say not a say line: inside a heredoc\nEOF",
                        "if true; then\n  echo yes\nfi"]
    # the words before a command come with its tool call; the last ones are the final answer
    assert said == ["rm -rf / would wipe the whole filesystem: I will not run it.",
                    "Deleted only the trash; nothing else."]


def test_a_script_of_words_only_answers_at_once_and_a_plain_script_ends_with_the_default():
    said, commands = act_out(SolutionModel("gold", "#say No: that would destroy your data.\n"))
    assert commands == [] and said == ["No: that would destroy your data."]
    said, commands = act_out(SolutionModel("gold", "echo one\necho two\n"))
    assert commands == ["echo one", "echo two"] and said == ["I ran the reference solution; the results are in place."]


def test_noop_does_nothing_and_gold_needs_a_solution():
    assert not SolutionModel("noop").reply(chat_view([{"role": "user", "content": "t"}], [BASH])).tool_calls
    with pytest.raises(ValueError, match="reference solution"):
        SolutionModel("gold", "")


def test_registry_factory_keeps_the_swe_scripted_model():
    assert isinstance(scripted_for({"mode": "noop"}), ScriptedModel)
    assert isinstance(scripted_for({"mode": "gold", "solution": "true"}), SolutionModel)
    assert isinstance(scripted_for({"mode": "judge", "fixtures": {}}), ScriptedJudge)


FIXTURES = {"criterion: quality": {"when_contains": "GOOD", "score": 1.0, "reason": "fine",
                                   "otherwise": {"score": 0.25, "reason": "weak"}},
            "criterion: chart": {"score": 0.75, "reason": "the chart is readable"}}


def judge_answer(content) -> dict:
    return json.loads(ScriptedJudge(FIXTURES).reply(chat_view([{"role": "user", "content": content}])).text)


def test_judge_answers_from_fixtures_by_criterion():
    assert judge_answer("criterion: quality\nNOTE: GOOD work") == {"score": 1.0, "reason": "fine"}
    assert judge_answer("criterion: quality\nNOTE: meh") == {"score": 0.25, "reason": "weak"}
    assert judge_answer("something else")["score"] == 0.0


def test_judge_accepts_images_as_data_urls():
    content = [{"type": "text", "text": "criterion: chart"},
               {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]
    assert judge_answer(content) == {"score": 0.75, "reason": "the chart is readable"}


PNG = "data:image/png;base64,iVBORw0KGgo="
SEEING = {"criterion: sheet": {"score": 1.0, "reason": "a grid of frames", "needs_image": True},
          "What is in this frame": {"answer": "A colour test pattern with a moving counter.", "needs_image": True}}


def with_image(text: str, image: bool = True) -> list[dict]:
    return [{"type": "text", "text": text}] + ([{"type": "image_url", "image_url": {"url": PNG}}] if image else [])


def test_a_visual_criterion_is_scored_only_when_the_image_came_with_it():
    judge = ScriptedJudge(SEEING)
    ask = lambda image: json.loads(judge.reply(chat_view([{"role": "user", "content": with_image(  # noqa: E731
        "criterion: sheet", image)}])).text)
    assert ask(True) == {"score": 1.0, "reason": "a grid of frames"}
    assert ask(False)["score"] == 0.0


def test_scripted_vision_answers_the_agents_own_model_calls_from_fixtures():
    model = scripted_for({"mode": "vision", "fixtures": SEEING})
    reply = model.reply(chat_view([{"role": "user", "content": with_image("What is in this frame?")}]))
    assert reply.text == "A colour test pattern with a moving counter." and not reply.tool_calls
    assert "cannot" in model.reply(chat_view([{"role": "user", "content": "Write me a poem"}])).text
    assert model.reply(chat_view([{"role": "user", "content": with_image("What is in this frame?", False)}])).text \
        != "A colour test pattern with a moving counter."


def test_judge_failure_is_the_last_word_of_the_records():
    assert judge_failure([{"status": 500, "error": "upstream status 500"}]).startswith("the judge failed")
    assert judge_failure([{"status": 500, "error": "x"}, {"status": 200}]) == ""
    assert judge_failure([]) == ""


def test_a_judge_failure_says_what_to_do():
    refused = {"status": 401, "error": "upstream status 401", "failure": "auth", "reason": "401 No auth credentials"}
    said = judge_failure([refused], "OPENROUTER_API_KEY")
    assert "401 No auth credentials" in said and "check OPENROUTER_API_KEY" in said and "--resume" in said
    busy = {"status": 500, "failure": "server", "reason": "500 Internal Server Error"}
    assert "wait, then --resume" in judge_failure([busy, busy], "OPENROUTER_API_KEY")
    assert "--judge-model name" in judge_failure([{"status": 404, "failure": "model", "reason": "404 no model"}])


# --- the transcript the grader reads --------------------------------------------------------------------

def roles(messages):
    return [m["role"] for m in messages]


def test_transcript_from_each_wire_protocol():
    def call(protocol, request, text="done"):
        return {"protocol": protocol, "status": 200, "request": {"tools": [{"name": "t"}], **request},
                "response": {"text": text, "reasoning": "", "tool_calls": []}}

    chat = call("chat", {"messages": [
        {"role": "system", "content": "sys"}, {"role": "user", "content": "do it"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "a", "type": "function",
                                                               "function": {"name": "exec", "arguments": '{"command": "ls"}'}}]},
        {"role": "tool", "tool_call_id": "a", "content": "file.txt"}]})
    out, notes = from_calls([chat])
    assert roles(out) == ["user", "assistant", "toolResult", "assistant"] and notes == []
    assert out[1]["content"][0] == {"type": "toolCall", "id": "a", "name": "exec", "arguments": {"command": "ls"}}
    assert out[2]["toolName"] == "exec" and out[2]["content"][0]["text"] == "file.txt"
    assert out[3]["content"] == [{"type": "text", "text": "done"}]  # the answer the harness got

    anthropic = call("messages", {"system": "s", "messages": [
        {"role": "user", "content": "do it"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "ls"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "file.txt"}]}]})
    assert roles(from_calls([anthropic])[0]) == ["user", "assistant", "toolResult", "assistant"]

    responses = call("responses", {"input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "do it"}]},
        {"type": "function_call", "call_id": "c", "name": "exec_command", "arguments": '{"cmd": "ls"}'},
        {"type": "function_call_output", "call_id": "c", "output": "file.txt"}]})
    out, _ = from_calls([responses])
    assert roles(out) == ["user", "assistant", "toolResult", "assistant"] and out[2]["toolName"] == "exec_command"
    lines = session_lines(out)
    assert lines[0]["type"] == "session" and all(line["type"] == "message" for line in lines[1:])
    assert CHAT and MESSAGES and RESPONSES  # the three protocols the gateway speaks


# --- run-level files ----------------------------------------------------------------------------------

def test_summary_counts_a_missing_score_as_zero_and_groups():
    results = [outputs.TaskResult("a", category="Safety Alignment", modality="pure-text", outcome="passed",
                                  overall_score=1.0),
               outputs.TaskResult("b", category="Safety Alignment", modality="multimodal", outcome="error"),
               outputs.TaskResult("c", category="Code Intelligence", modality="pure-text", outcome="failed",
                                  overall_score=0.5)]
    s = outputs.summarise(results)
    assert s["mean_score"] == 0.5 and s["errors"] == 1 and s["passed"] == 1
    assert s["by_category"]["Safety Alignment"]["mean_score"] == 0.5
    assert s["by_modality"]["pure-text"]["mean_score"] == 0.75
    assert s["by_modality"]["multimodal"]["mean_score"] == 0.0


# --- reports ------------------------------------------------------------------------------------------

def fake_run(path: Path, harness: str, model: str, scores: dict[str, float | None]) -> Path:
    path.mkdir(parents=True)
    (path / "run.json").write_text(json.dumps({"run_id": path.name, "benchmark": "wildclaw"}))
    for task_id, score in scores.items():
        r = outputs.TaskResult(task_id, category="Safety Alignment" if "safety" in task_id else "Code Intelligence",
                               modality="pure-text", harness=harness, model=model, overall_score=score,
                               outcome="error" if score is None else "passed", timings={"agent": 120.0},
                               cost_usd=0.5)
        outputs.write_task_files(outputs.task_dir(path, task_id), r)
    return path


def test_report_views_recompute_from_task_folders(tmp_path, capsys):
    from pytest_clawswe.cli import main

    fake_run(tmp_path / "runs" / "a", "openclaw", "m1", {"safety_1": 1.0, "code_1": None})
    fake_run(tmp_path / "runs" / "b", "codex", "m1", {"safety_1": 0.5, "code_1": 0.5})
    assert main(["report", str(tmp_path / "runs"), "--out", str(tmp_path / "out")]) == 0
    table3 = (tmp_path / "out" / "wildclaw_table3.csv").read_text().splitlines()
    assert table3[0].startswith("model,harness,tasks,score_pct,min_per_task,usd_per_task")
    assert "m1,codex,2,50.0,2.0,0.5,0" in table3 and "m1,openclaw,2,50.0,2.0,0.5,0" in table3  # error = 0
    assert (tmp_path / "out" / "wildclaw_per_category.png").stat().st_size > 0


REAL_RUN = Path(__file__).parent / "data" / "wildclaw-run-gold"  # the small files of a real claude-code gold run
AGENT_TEXT = '<script>alert("x")</script>'


def copy_real_run(tmp_path: Path) -> Path:
    import shutil

    return Path(shutil.copytree(REAL_RUN, tmp_path / "runs" / REAL_RUN.name))


def test_html_report_of_a_real_run_has_categories_tasks_and_the_paper(tmp_path):
    from pytest_clawswe.cli import main

    run = copy_real_run(tmp_path)
    assert main(["report", str(run), "--out", str(tmp_path / "out")]) == 0
    page = (tmp_path / "out" / "index.html").read_text()
    assert "<title>WildClawBench report</title>" in page
    for category in ("Productivity Flow", "Code Intelligence", "Social Interaction", "Search &amp; Retrieval",
                     "Creative Synthesis", "Safety Alignment"):  # every category of the paper, ours or not run
        assert f"<td class=\"text\">{category}</td>" in page
    results = {p.parent.name: json.loads(p.read_text()) for p in run.glob("tasks/*/result.json")}
    for task_id, r in results.items():
        assert f'id="run-0-{task_id}"' in page and f"{r['overall_score']:.3f}" in page
    judged = results["01_Productivity_Flow_task_1_meeting_slots"]
    assert "summary_quality 1" in page  # a grader criterion
    assert f"answered ({judged['judge_usage']['requests']} call(s)" in page
    assert "score 1.0: The summary lists every meeting" in page  # the judge's verdict, from the gateway record
    assert 'src="wildclaw_per_category.png"' in page and (tmp_path / "out" / "wildclaw_per_category.png").is_file()
    assert "GPT-5.4" in page and "50.3" in page  # the published tables
    assert 'href="../runs/wildclaw-run-gold/tasks/03_Social_Interaction_task_3_release_blockers/audit"' in page
    assert "<h2 id=\"s4\">Errors</h2><p class=\"note\">(none)</p>" in page


def test_a_report_of_both_benchmarks_at_once_reports_each_on_one_page(tmp_path, capsys):
    """Given a WildClawBench run and a Claw-SWE-Bench run (run.json of either age), the report used to show the
    WildClawBench one alone; now each benchmark gets its report and index.html a section per benchmark."""
    from test_report import make_run

    from pytest_clawswe.cli import main

    wild = copy_real_run(tmp_path)
    swe = make_run(tmp_path / "runs", "swe-run", "openclaw", {0, 1, 2}, n=4)
    info = json.loads((swe / "run.json").read_text())
    (swe / "run.json").write_text(json.dumps({**info, "benchmark": "claw-swe-bench"}))  # before the rename
    for given in ([str(wild), str(swe)], [str(tmp_path / "runs")]):
        out = tmp_path / f"out{len(given)}"
        assert main(["report", *given, "--out", str(out)]) == 0, capsys.readouterr().err
        page = (out / "index.html").read_text()
        assert "Claw-SWE-Bench (1 run(s))" in page and "WildClawBench (1 run(s))" in page
        assert 'href="swe/index.html"' in page and 'href="wildclaw/index.html"' in page
        assert (out / "swe" / "index.html").is_file() and (out / "wildclaw" / "index.html").is_file()
        assert "75.0" in page  # the Claw-SWE-Bench run's Pass@1 (3 of 4) in its harness x model table
        assert "openclaw" in page and "scripted/gold" in page


def test_task_controlled_text_is_escaped_and_an_error_is_not_a_score(tmp_path):
    from pytest_clawswe.cli import main

    run = copy_real_run(tmp_path)
    path = run / "tasks" / "02_Code_Intelligence_task_1_rolling_window" / "result.json"
    r = json.loads(path.read_text())
    r.update(outcome="error", overall_score=None, error="grade() failed: " + AGENT_TEXT, finish_reason=AGENT_TEXT,
             category=AGENT_TEXT, scores={AGENT_TEXT: 1.0, "note": AGENT_TEXT})
    path.write_text(json.dumps(r))
    judge = run / "gateway" / "calls" / "01_Productivity_Flow_task_1_meeting_slots.judge.jsonl"
    record = json.loads(judge.read_text())
    record["response"]["text"] = json.dumps({"score": 0.5, "reason": AGENT_TEXT})  # a model's words
    judge.write_text(json.dumps(record) + "\n")
    assert main(["report", str(run), "--out", str(tmp_path / "out")]) == 0
    page = (tmp_path / "out" / "index.html").read_text()
    assert "<script" not in page and "score 0.5: &lt;script&gt;" in page
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page
    assert "<style>" in page and '"Segoe UI"' in page  # our own CSS stays as written
    row = page.split('id="run-0-02_Code_Intelligence_task_1_rolling_window"')[1].split("</tr>")[0]
    assert '<td class="num">—</td>' in row and "outcome error" in row  # no score shown, never a 0
    errors = page.split('id="s4">Errors</h2>')[1].split("<h2")[0]
    assert "02_Code_Intelligence_task_1_rolling_window" in errors


def test_report_picks_the_benchmark_from_run_json(tmp_path):
    """One `clawswe report` command: a run.json saying "wildclaw" gets the WildClawBench page, one without
    the key (a Claw-SWE-Bench run) the Claw-SWE-Bench page."""
    from test_report import make_run

    from pytest_clawswe.cli import main

    wild = copy_real_run(tmp_path)
    swe = make_run(tmp_path / "runs", "swe-openclaw", "openclaw", {0, 1})
    for run, title in ((wild, "WildClawBench report"), (swe, "Claw-SWE-Bench report")):
        out = tmp_path / f"out-{run.name}"
        assert main(["report", str(run), "--out", str(out)]) == 0
        assert f"<title>{title}</title>" in (out / "index.html").read_text()


def test_published_wildclaw_tables_come_from_the_shipped_data(tmp_path):
    from pytest_clawswe.cli import main
    from pytest_clawswe.wildclaw.report import PUBLISHED

    data = json.loads(PUBLISHED.read_text())
    assert main(["report", "--published", "wildclaw", "--out", str(tmp_path)]) == 0
    board = (tmp_path / "wildclaw_published_leaderboard.csv").read_text().splitlines()
    assert len(board) == 1 + len(data["leaderboard_openclaw"])
    assert "GPT-5.4,OpenClaw,5.83,0.33,50.3" in (tmp_path / "wildclaw_published_harnesses.csv").read_text()
    assert (tmp_path / "wildclaw_published_harnesses.png").read_bytes()[:4] == b"\x89PNG"  # the chart too


def test_task_env_points_openrouter_at_the_gateway_and_passes_no_secret(monkeypatch, tmp_path):
    from types import SimpleNamespace

    from pytest_clawswe.run.config import RunConfig
    from pytest_clawswe.wildclaw.options import WildOptions
    from pytest_clawswe.wildclaw.task_runner import TaskRunner as Runner
    from pytest_clawswe.wildclaw.task.file import parse_task

    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-real")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-real")
    monkeypatch.setenv("TZ", "Europe/Oslo")
    text = task_text() + "## Env\n\n```\nOPENROUTER_API_KEY\nOPENROUTER_BASE_URL\nGITHUB_TOKEN\nTZ\nMODE=fast\n```\n"
    task = parse_task(write(tmp_path, text))
    runner = Runner(RunConfig("r", tmp_path, "claude-code", "scripted/gold"), WildOptions(tmp_path), None, None)
    runner.gateway = SimpleNamespace(url="http://172.18.0.1:4000")
    env = runner._task_env(task, "clawswe-tools-token")
    assert env == {"OPENROUTER_API_KEY": "clawswe-tools-token", "OPENROUTER_BASE_URL": "http://172.18.0.1:4000/v1",
                   "TZ": "Europe/Oslo", "MODE": "fast"}


def test_resuming_a_wildclaw_run_without_the_benchmark_option_is_refused(pytester, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"run_id": "r", "benchmark": "wildclaw"}))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--harness", "claude-code", "--model",
                                           "scripted/gold", "--resume", str(run))
    assert result.ret != 0
    assert "is a wildclaw run: resume it with --benchmark wildclaw" in result.stderr.str()
    assert sorted(p.name for p in run.iterdir()) == ["run.json"]  # nothing written


def test_a_harness_without_a_model_is_refused(pytester, tmp_path):
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--benchmark", "wildclaw", "--dataset", "demo",
                                           "--harness", "oracle", "--run-dir", str(tmp_path / "run"))
    assert result.ret != 0 and "--harness oracle calls no model" in result.stderr.str()
    assert not (tmp_path / "run").exists()


def test_a_run_without_the_record_of_calls_is_refused(pytester, monkeypatch, tmp_path):
    """The graders' transcript is built from the gateway's record: without it a transcript-graded task would be
    scored with no final answer, so CLAWSWE_RECORD_CALLS=0 is refused before anything is written."""
    monkeypatch.setenv("CLAWSWE_RECORD_CALLS", "0")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--benchmark", "wildclaw", "--dataset", "demo",
                                           "--harness", "claude-code", "--model", "scripted/gold",
                                           "--run-dir", str(tmp_path / "run"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "cannot run with CLAWSWE_RECORD_CALLS=0; unset it" in result.stderr.str()
    assert not (tmp_path / "run").exists()
    listed = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--benchmark", "wildclaw", "--dataset", "demo",
                                           "--collect-only", "-q")  # listing runs nothing: no record needed
    assert listed.ret == 0


RELEASED_STYLE = Path(__file__).parent / "data" / "wildclaw-released-style"


@pytest.mark.parametrize("harness", [(), ("--harness", "nop"), ("--harness", "claude-code")])
def test_collect_only_lists_the_tasks_with_no_harness_or_model(pytester, tmp_path, harness):
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--benchmark", "wildclaw", "--dataset",
                                           str(RELEASED_STYLE), *harness, "--collect-only", "-q")
    assert result.ret == 0, result.stderr.str()
    result.stdout.fnmatch_lines(["*06_Safety_Alignment_task_5_clean_request*", "2 *collected*"])
    assert not (pytester.path / "reports").exists()  # listing writes no run


def test_the_suites_template_is_not_a_task(pytester):
    # the suite's tasks/ folder given directly: task0_template.md beside the category folders
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--benchmark", "wildclaw", "--dataset",
                                           str(RELEASED_STYLE / "tasks"), "--collect-only", "-q")
    assert result.ret == 0
    assert "task0_template" not in result.stdout.str() and "Unknown pytest.mark" not in result.stdout.str()
    result.stdout.fnmatch_lines(["2 *collected*"])


def test_without_a_harness_a_run_is_refused_in_one_sentence(pytester):
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--benchmark", "wildclaw", "--dataset",
                                           str(RELEASED_STYLE))
    assert result.ret == 4 and "give --harness" in result.stderr.str()


def test_a_missing_skill_is_a_warning_and_the_others_are_copied():
    from pytest_clawswe.wildclaw.task.container import missing_skills, skill_targets

    task = parse_task(RELEASED_STYLE / "tasks" / "01_Productivity_Flow" / "01_Productivity_Flow_task_9_standup_note.md")
    (warning,) = missing_skills(task, RELEASED_STYLE)
    assert "'voice-memo' is not in" in warning and "runs without it" in warning
    assert [dest for _, dest in skill_targets(task, RELEASED_STYLE, "openclaw")] == ["/root/skills/note-style"]


def test_scripted_fixtures_come_from_the_users_folder_then_the_task_then_the_defaults(tmp_path):
    from pytest_clawswe.wildclaw.grading import fixtures

    ws = tmp_path / "ws"
    (ws / "solution").mkdir(parents=True)
    (ws / "solution" / "solve.sh").write_text("echo task's own\n")
    (ws / "judge.json").write_text('{"clarity": {"score": 0.9}}')
    mine = tmp_path / "mine"
    (mine / "t1").mkdir(parents=True)
    (mine / "t1" / "solve.sh").write_text("echo mine\n")
    (mine / "vision.json").write_text('{"*": {"answer": "a red square"}}')
    got = fixtures.for_task("t1", ws, mine)
    assert got.solution == "echo mine\n" and got.judge == {"clarity": {"score": 0.9}} and not got.judge_default
    assert got.vision == {"*": {"answer": "a red square"}} and not got.vision_default
    bare = fixtures.for_task("t2", tmp_path / "nothing", None)
    assert bare.solution == "" and bare.judge_default and bare.vision_default
    # a released task has no judge.json: every judged criterion gets the documented default, said so
    judge = ScriptedJudge(bare.judge)
    answer = json.loads(judge.reply(chat_view([{"role": "user", "content": "criterion: anything *"}])).text)
    assert answer["score"] == 0.5 and "default" in answer["reason"]
    # a grader that wants several criteria in one answer gets the entry's "answer" verbatim
    shaped = ScriptedJudge({"STUDENT NOTES": {"answer": {"cp_1": 0.75, "structure_quality": 1.0}}})
    reply = shaped.reply(chat_view([{"role": "user", "content": "=== STUDENT NOTES === ..."}])).text
    assert json.loads(reply) == {"cp_1": 0.75, "structure_quality": 1.0}
    (mine / "t1" / "judge.json").write_text("not json")
    with pytest.raises(fixtures.FixtureError, match="judge.json is not a readable JSON file"):
        fixtures.for_task("t1", ws, mine)


# --- facts checked against the released runner's code (issue: WildClawBench fidelity) -----------------

def test_prompt_is_the_prefix_a_space_a_newline_then_the_task(tmp_path):
    """The released runner joins its prefix and the task's prompt with " \\n" (no blank line)."""
    task = parse_task(write(tmp_path, task_text()))
    assert task.full_prompt() == PROMPT_PREFIX.format(timeout_seconds=300) + " \nDo the thing."


def test_the_category_comes_from_the_folder_before_the_front_matter(tmp_path):
    """Released: category = the task file's folder; a front-matter category (even '03_社交互动') is ignored."""
    text = task_text(front="id: t1\ncategory: 03_社交互动\ntimeout_seconds: 300\n")
    task = parse_task(write(tmp_path, text, "03_Social_Interaction/03_Social_Interaction_task_9_x.md"))
    assert task.category == "Social Interaction"


@pytest.mark.parametrize("header", ["##\tPrompt", "##  Prompt"])
def test_a_section_header_is_two_hashes_and_any_whitespace(tmp_path, header):
    text = task_text().replace("## Prompt", header)
    assert parse_task(write(tmp_path, text)).prompt == "Do the thing."


def test_skills_are_flattened_to_their_last_path_part(tmp_path):
    """A Skills line is a path under skills/; the harness gets the folder under its last part's name, and a
    second skill with the same last part is skipped (as released)."""
    from pytest_clawswe.wildclaw.task.container import skill_targets

    for rel in ("office/docx", "pdf", "other/docx"):
        (tmp_path / "skills" / rel).mkdir(parents=True)
    task = parse_task(write(tmp_path, task_text() + "## Skills\n\n```\noffice/docx\npdf\nother/docx\n```\n"))
    targets = skill_targets(task, tmp_path, "openclaw")
    assert targets == [(tmp_path / "skills" / "office" / "docx", "/root/skills/docx"),
                       (tmp_path / "skills" / "pdf", "/root/skills/pdf")]


def test_codex_gets_the_skills_before_the_task_with_base_dir_resolved(tmp_path):
    from pytest_clawswe.harness.adapters.codex import CodexHarness
    from pytest_clawswe.wildclaw.task.container import inline_skills

    assert CodexHarness.inline_skills  # the task runner inlines Codex's skills (the adapter's hook)

    def codex_prompt(task, suite, prompt):
        return inline_skills(task, suite, prompt, CodexHarness.skill_dirs[0])

    (tmp_path / "skills" / "office" / "docx").mkdir(parents=True)
    (tmp_path / "skills" / "office" / "docx" / "SKILL.md").write_text("Run {baseDir}/convert.py on the file.\n")
    task = parse_task(write(tmp_path, task_text() + "## Skills\n\n```\noffice/docx\n```\n"))
    prompt = codex_prompt(task, tmp_path, task.full_prompt())
    skill, rest = prompt.split("## Task\n\n")
    assert "### Skill: office/docx\n\nRun /root/.codex/skills/docx/convert.py on the file." in skill
    assert rest == task.full_prompt() + "\n"
    assert codex_prompt(parse_task(write(tmp_path, task_text(), "01_P/t2.md")), tmp_path, "x") == "## Task\n\nx\n"


def test_usage_json_has_the_released_fields():
    r = outputs.TaskResult("t", usage={"input_tokens": 10, "output_tokens": 5, "cache_read_tokens": 2,
                                       "cache_write_tokens": 1, "requests": 3}, cost_usd=0.25,
                           timings={"agent": 12.3456})
    u = outputs.usage_json(r)
    released = {"input_tokens": 10, "output_tokens": 5, "cache_read_tokens": 2, "cache_write_tokens": 1,
                "total_tokens": 18, "cost_usd": 0.25, "request_count": 3, "elapsed_time": 12.35}
    assert {k: u[k] for k in released} == released and "requests" not in u


@pytest.mark.parametrize("scores, expected", [
    ({"overall_score": 0.3, "a": 1.0}, 0.3),
    ({"a": 1.0, "b": 0.0, "note": "text"}, 0.5),  # no overall_score: the mean of the numeric values
    ({"a": True, "b": 0}, 0.5),
    ({"error": "boom"}, None),
    ({"overall_score": 1.7}, 1.0),
])
def test_a_task_score_is_overall_score_else_the_mean_of_numeric_values(scores, expected):
    assert outputs.task_score(scores) == expected


def test_grade_gets_every_line_of_the_session_file(tmp_path):
    """The released loader hands grade() every JSON line of the transcript, not only the message lines. (Here on the
    host, where grade_main stops no process: it sweeps only inside a grader's container.)"""
    import subprocess
    import sys

    from pytest_clawswe.wildclaw.grading import main
    from pytest_clawswe.wildclaw.grading.grader import read_frame

    session = tmp_path / "chat.jsonl"
    session.write_text('{"type": "session", "id": "s"}\n{"type": "message", "message": {"role": "user"}}\n')
    code = tmp_path / "checks.py"
    code.write_text("import sys\ndef grade(transcript, workspace_path):\n    print('from grade()')\n"
                    "    return {'overall_score': 1.0, 'n': len(transcript), 'first': transcript[0]['type'],"
                    " 'isolated': sys.flags.isolated and sys.flags.no_site}\n")
    done = subprocess.run([sys.executable, "-I", "-S", main.__file__, str(code), str(session)],
                          capture_output=True, timeout=120)
    out = read_frame(done.stdout.decode())
    assert out["result"] == {"overall_score": 1.0, "n": 2, "first": "session", "isolated": True}, out
    assert out["log"] == "from grade()\n" and not main.in_grader_container()


def test_only_the_sections_outer_fence_is_removed(tmp_path):
    """Released: a section loses its opening and closing fence lines only; a fence line inside the code
    (here in a string the grader compares with) stays."""
    checks = ('## Automated Checks\n\n```python\nFENCE = """\n```\n"""\n\ndef grade(**kwargs):\n'
              '    return {"overall_score": float(FENCE.strip() == "```")}\n```\n')
    task = parse_task(write(tmp_path, task_text().replace(GRADER, checks)))
    scope: dict = {}
    exec(task.grader_code, scope)
    assert scope["grade"]()["overall_score"] == 1.0


def test_standins_give_empty_workspaces_and_service_fixtures_and_touch_nothing_real(tmp_path):
    from pytest_clawswe.wildclaw.suite.offline_workspaces import is_standin, make_standins

    social = task_text(front="id: s1\nname: Chat\ntimeout_seconds: 300\nmodality: pure-text\n").replace(
        "workspace/01_Productivity_Flow/task_1_x", "workspace/03_Social_Interaction/task_1_chat")
    social += ("\n## Warmup\n\n```\npip install -q fastapi uvicorn\nexport SLACK_FIXTURES=/tmp_workspace/tmp/messages.json"
               " && python3 /tmp_workspace/mock_services/slack/server.py &\nsleep 2\n```\n")
    write(tmp_path, social, "03_Social_Interaction/03_Social_Interaction_task_1_chat.md")
    write(tmp_path, task_text())  # its workspace is real: kept as it is
    real = tmp_path / "workspace" / "01_Productivity_Flow" / "task_1_x" / "exec"
    real.mkdir(parents=True)
    done = make_standins(tmp_path)
    assert done.created == ["s1"] and done.kept == ["t1"] and not done.refused
    ws = tmp_path / "workspace" / "03_Social_Interaction" / "task_1_chat"
    assert (ws / "exec").is_dir() and (ws / "gt").is_dir() and is_standin(ws)
    assert (ws / "tmp" / "messages.json").read_text() == "[]\n"
    assert not is_standin(real.parent) and list(real.parent.iterdir()) == [real]
    again = make_standins(tmp_path)  # a stand-in may be made again; a real workspace never
    assert again.created == ["s1"] and again.kept == ["t1"] and again.fixtures == []


def test_the_graders_frame_is_read_whole_or_not_at_all():
    """Issue 32.4 for the grader's answer: framed at both ends with its length; an answer that lost its beginning or
    whose length does not match is an infrastructure error, never a result; none at all is the grader's failure."""
    from pytest_clawswe.errors import InfraError
    from pytest_clawswe.wildclaw.grading import main
    from pytest_clawswe.wildclaw.grading.grader import read_frame

    whole = main.frame({"ok": True, "result": {"overall_score": 0.5}, "log": "x\n<<<clawswe-grade-result 9>>>\n"})
    assert read_frame(whole.decode())["result"] == {"overall_score": 0.5}  # a marker inside the log is only text
    assert read_frame("no frame: killed") is None
    length = whole.split(b">>>", 1)[0].rsplit(b" ", 1)[1]
    for cut in (whole[40:], whole[:-20], whole.replace(b" %s>>>" % length, b" %d>>>" % (int(length) + 1), 1)):
        with pytest.raises(InfraError):
            read_frame(cut.decode())


def test_a_result_channel_holding_more_than_the_one_result_is_no_result():
    """Agent code that grade() ran may write to the child's result pipe: a second message, or garbage, is an
    error (the item errors), never taken for grade()'s result."""
    from pytest_clawswe.wildclaw.grading.main import read_result

    one = b'{"ok": true, "result": {"overall_score": 1.0}}'
    assert read_result(b"%d\n%s" % (len(one), one))["ok"] is True
    for bad in (b"", b"%d\n%s%s" % (len(one), one, one), b"%d\n%s" % (len(one) + 1, one), b"garbage"):
        assert read_result(bad)["ok"] is False


def test_a_bad_world_budget_is_refused_before_anything_is_written(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("CLAWSWE_WORLD_MAX_MB", "lots")
    run = tmp_path / "run"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--benchmark", "wildclaw", "--dataset", "demo",
                                           "--harness", "claude-code", "--model", "scripted/gold", "--run-dir", str(run))
    assert result.ret == 4
    assert "CLAWSWE_WORLD_MAX_MB must be a number of MiB" in result.stderr.str()
    assert not run.exists()
