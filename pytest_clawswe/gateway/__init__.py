"""The model gateway: a host-side HTTP service every model call of every container goes through.

Which starts what: control/process.py (GatewayProcess.start) starts `python -m pytest_clawswe.gateway serve`
(__main__.py), which runs service/workers.py, which serves service/app.py's Gateway. The run registers each
instance (control/admin_api.py: GatewayClient.register -> a per-instance token; control/run_gateway.py: the handle
every item uses), hands the container the gateway URL and that token (never a real key), and reads the
instance's usage back (GatewayClient.usage).

The folders, by job:
- service/   the gateway process: its HTTP app, forwarding, answers, auth, tokens, admin API, workers
- record/    what it writes down: the usage ledger (DIR/usage/<instance_id>.jsonl) and every call's bodies
- upstream/  the providers: routes and keys, request shaping (describe_shaping() says what a run does),
             failures, the key kept out of answers
- scripted/  the scripted model, the stand-in for a provider
- protocols/ OpenAI Chat Completions, OpenAI Responses, Anthropic Messages, and their SSE
- control/   the run's side: the process, the admin client, the run's handle, relays, the key check
contract.py holds what the two sides agree on.
"""
from pytest_clawswe.gateway.control.admin_api import GatewayClient, GatewayError, read_usage
from pytest_clawswe.gateway.control.process import GatewayProcess
from pytest_clawswe.gateway.scripted.responder import ScriptedModel
from pytest_clawswe.gateway.upstream.providers import Upstream, check_upstream
from pytest_clawswe.gateway.upstream.shaping import describe as describe_shaping

__all__ = [
    "GatewayClient", "GatewayError", "GatewayProcess", "ScriptedModel", "Upstream", "check_upstream",
    "describe_shaping", "read_usage",
]
