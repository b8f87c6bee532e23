"""`generic`: GenericAgent (PyPI genericagent), the paper's 3-line prompt variant (generic.txt: no web tools).

GenericAgent has no one-shot flag, and it writes memory/, temp/ (its code_run cwd and raw model logs) and
assets/ files into its own package folder, which is read-only in the bundle volume. So each instance gets a
writable copy of the package (12 MB, /tmp/clawswe-agent/generic/genericagent), first on sys.path, and the
process runs in that copy, as GenericAgent expects. It is driven headless through its own classes, the way
its `--reflect` mode does it (GeneraticAgent().put_task, then wait for "done"), minus reflect mode's 120 s
wait per output chunk, which would abort any task whose command prints nothing for two minutes.

Model config: mykey.py via GENERICAGENT_MYKEY (native_oai_config: OpenAI chat with native tool calls,
pointed at the gateway). Web tools (web_scan, web_execute_js) are forbidden by the prompt, as in the paper;
the locked network leaves them nothing to reach anyway. Usage: only its "[Cache] input=N cached=M" lines
(N = the whole prompt, M = its cached part, one line per request); no output tokens.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from pytest_clawswe.harness.adapter import AgentContext, AgentRun
from pytest_clawswe.harness.adapters._bundled import STATE_ROOT, BundledHarness, BundledOptions
from pytest_clawswe.harness.gateway_urls import openai_base_url

HOME = f"{STATE_ROOT}/generic"
PACKAGE = f"{HOME}/genericagent"
MYKEY = f"{HOME}/mykey.py"
DRIVER = f"{HOME}/run_task.py"
_CACHE_LINE = re.compile(r"^\[Cache\] input=(\d+) cached=(\d+)", re.M)

_DRIVER = """\
import re, sys, threading
sys.path.insert(0, {home!r})  # the writable copy of the package comes first
from genericagent.agentmain import GeneraticAgent
prompt = open({prompt!r}, encoding="utf-8").read()
agent = GeneraticAgent()
agent.next_llm(0)
agent.verbose = False
threading.Thread(target=agent.run, daemon=True).start()
queue = agent.put_task(prompt, source="task")
while "done" not in (item := queue.get()):
    pass
print(item["done"])
# A failed model call ends GenericAgent's task like an answer: its last turn is then just "Error: ...".
last_turn = item["done"].rsplit("**LLM Running (Turn", 1)[-1]
if re.search(r"^Error: ", last_turn, re.M):
    print("[clawswe] model error", flush=True)
    sys.exit(3)
print("[clawswe] task done", flush=True)
"""


@dataclass
class GenericOptions(BundledOptions):
    read_timeout: int = field(default=180, metadata={"help": "seconds GenericAgent waits for a model reply"})
    max_retries: int = field(default=3, metadata={"help": "GenericAgent's own retries of a failed model call"})


class GenericAgentHarness(BundledHarness):
    name = "generic"
    bundle_name = "generic"
    prompt_template = "generic.txt"
    Options = GenericOptions
    grace_s = 0.0  # the released driver's deadline is exactly the budget

    def _mykey(self, ctx: AgentContext) -> str:
        config = {"apikey": ctx.gateway_token, "apibase": openai_base_url(ctx.gateway_url),
                  "model": self.model_id(ctx), "max_retries": self.opts.max_retries, "connect_timeout": 10,
                  "read_timeout": self.opts.read_timeout}
        return f"native_oai_config = {config!r}\nproxy = ''  # else it defaults to http://127.0.0.1:2082\n"

    def config_files(self, ctx: AgentContext) -> dict[str, str]:
        return {MYKEY: self._mykey(ctx), DRIVER: _DRIVER.format(home=HOME, prompt=f"{HOME}/prompt.txt")}

    def create_agent(self, ctx: AgentContext) -> None:
        site = f"{self.home}/python/lib/python3*/site-packages/genericagent"
        super().create_agent(ctx)
        ctx.workspace.exec(f"cp -a {site} {PACKAGE}", check=True)

    def argv(self, ctx: AgentContext) -> list[str]:
        # run in the package copy: GenericAgent resolves temp/ and memory/ from its working directory
        return ["sh", "-c", f'cd {PACKAGE} && exec "$0" -I -u {DRIVER}', f"{self.home}/python/bin/python3"]

    def send_task(self, ctx: AgentContext, prompt: str) -> AgentRun:
        env = {"GENERICAGENT_MYKEY": MYKEY, "GA_LANG": "en"}  # GA_LANG: as released, English messages
        result, stdout, stderr = self.run(ctx, self.argv(ctx), env, prompt)
        failed = ""
        if result.exit_code == 3 and "[clawswe] model error" in stdout:
            failed = "GenericAgent's model call failed (see agent.log)"
        elif not result.timed_out and result.exit_code == 0 and "[clawswe] task done" not in stdout:
            failed = "GenericAgent stopped before finishing its task"
        return self.finish(result, stdout, stderr, self._usage(stdout), failed, name="GenericAgent", ctx=ctx)

    @staticmethod
    def _usage(output: str) -> dict:
        lines = [(int(a), int(b)) for a, b in _CACHE_LINE.findall(output)]
        if not lines:
            return {}
        # GenericAgent reports the whole prompt and its cached part; no output or cache-write counts
        return {"prompt_tokens": sum(a for a, _ in lines), "cache_read_tokens": sum(b for _, b in lines),
                "requests": len(lines)}

    def backup_session(self, ctx: AgentContext, dest: Path) -> None:
        # its state, without the package's own code: temp/ (raw model logs), memory/, our config
        for path in (f"{PACKAGE}/temp", f"{PACKAGE}/memory", MYKEY, DRIVER, f"{HOME}/prompt.txt",
                     f"{HOME}/stdout.txt", f"{HOME}/stderr.txt"):
            ctx.workspace.copy_out(path, dest / "generic")
