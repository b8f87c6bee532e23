"""Issue 12, case 10 with real containers: two agents on one run network, each with its own gateway
token bound to its container's address (as the runner registers it). One cannot spend or read as the other."""
from __future__ import annotations

import json
import secrets

import pytest

from pytest_clawswe.labels import LABEL_RUN, owner_label
from pytest_clawswe.engine.network.locked import container_address, network_host
from pytest_clawswe.gateway import GatewayProcess

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]

CALL = """
import json, sys, urllib.request, urllib.error
url, token = sys.argv[1], sys.argv[2]
body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
req = urllib.request.Request(url + "/v1/chat/completions", data=body,
                             headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
try:
    print(urllib.request.urlopen(req, timeout=20).status)
except urllib.error.HTTPError as exc:
    print(exc.code)
"""


def test_one_agent_cannot_use_another_agents_token(docker_client, python_demo, tmp_path):
    run_id = "h3tok-" + secrets.token_hex(3)
    labels = {LABEL_RUN: run_id, **owner_label()}
    network = docker_client.networks.create(f"clawswe-{run_id}", driver="bridge", labels=labels)
    containers = []
    try:
        with GatewayProcess.start(tmp_path / "gw", host=network_host(docker_client, network.name)) as gw:
            for name in ("a", "b"):
                c = docker_client.containers.run(python_demo.image, ["sleep", "300"], detach=True, labels=labels,
                                                 network=network.name, name=f"{run_id}-{name}")
                containers.append(c)
            a, b = containers
            client = gw.client()
            token_a = client.register("tok__a", "scripted/noop", {"mode": "noop"},
                                      address=container_address(a, network.name))
            token_b = client.register("tok__b", "scripted/noop", {"mode": "noop"},
                                      address=container_address(b, network.name))
            assert container_address(a, network.name) != container_address(b, network.name) != ""

            def call(container, token) -> str:
                code, out = container.exec_run(["python3", "-c", CALL, gw.url, token])
                return out.decode().strip()

            assert call(a, token_a) == "200" and call(b, token_b) == "200"
            assert call(b, token_a) == "401" and call(a, token_b) == "401"  # spending as the other: refused
            assert client.usage(token_a).requests == 1 and client.usage(token_b).requests == 1
            records = client.requests(token_a)
            assert [r["status"] for r in records] == [200] and json.dumps(records).count("tok__a") == 1
    finally:
        for c in containers:
            c.remove(force=True)
        network.remove()
