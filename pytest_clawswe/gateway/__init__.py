"""The model gateway: a host-side HTTP service every model call of every container goes through.

The run starts it (GatewayProcess.start), registers each instance (GatewayClient.register ->
a per-instance token), hands the container the gateway URL and that token (never a real key),
and reads the instance's usage back (GatewayClient.usage). It forwards to the real provider
(upstream.py) or answers as the scripted model (scripted.py), over OpenAI Chat Completions,
OpenAI Responses or Anthropic Messages (protocols.py), shapes requests per provider and harness as the
released proxies did (shaping.py; describe_shaping() says what a run does), and records every request per
instance (ledger.py: DIR/usage/<instance_id>.jsonl).
"""
from pytest_clawswe.gateway.client import (
    GatewayClient,
    GatewayError,
    GatewayProcess,
    anthropic_base_url,
    openai_base_url,
    read_usage,
)
from pytest_clawswe.gateway.scripted.model import ScriptedModel
from pytest_clawswe.gateway.upstream.shaping import describe as describe_shaping
from pytest_clawswe.gateway.upstream.providers import Upstream, check_upstream

__all__ = [
    "GatewayClient", "GatewayError", "GatewayProcess", "ScriptedModel", "Upstream", "anthropic_base_url",
    "check_upstream", "describe_shaping", "openai_base_url", "read_usage",
]
