"""The cluster of a run as the Python `kubernetes` client reaches it (a kubeconfig context), raw JSON in and out.

Only the stable v1 API is used (pods, their exec, namespaces, service accounts, nodes, NetworkPolicy), with plain
JSON bodies and answers (`_preload_content=False`): the client's generated models differ between its releases,
the wire format does not. Every failure to reach the API server is an InfraError (the item errors, never
fails); an answer the server gives is an ApiError with its HTTP status.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from typing import Any

from pytest_clawswe.errors import InfraError, UserError

CLIENT_MISSING = ("--kubernetes needs the Python kubernetes client: pip install 'pytest-clawswe[kubernetes]'")


class ApiError(InfraError):
    """The API server answered with an error status."""

    def __init__(self, message: str, status: int, reason: str = ""):
        super().__init__(message)
        self.status, self.reason = status, reason


def label_value(text: str) -> str:
    """`text` as a label value Kubernetes takes (at most 63 of [A-Za-z0-9_.-], alphanumeric at both ends); a long
    or odd one keeps a readable prefix and a hash (the full text is kept in an annotation beside it)."""
    clean = re.sub(r"[^A-Za-z0-9_.-]", "-", text).strip("-_.")
    if clean == text and len(text) <= 63:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:10]
    prefix = clean[:52].rstrip("-_.")
    return f"{prefix}-{digest}" if prefix else digest


def dns_label(text: str, limit: int = 63) -> str:
    """`text` as a DNS label (lower-case alphanumerics and '-'), for object names; a hash keeps long ones apart."""
    clean = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    if len(clean) <= limit and clean:
        return clean
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    return f"{clean[:limit - 9].rstrip('-')}-{digest}".lstrip("-")


def labels_and_annotations(labels: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """The run's labels as Kubernetes labels (values made valid) and annotations (the values as they are)."""
    return {k: label_value(v) for k, v in labels.items()}, dict(labels)


class Cluster:
    """A cluster reached through a kubeconfig context (None: the kubeconfig's current one; KUBECONFIG or
    ~/.kube/config, as kubectl reads it)."""

    def __init__(self, context: str | None = None):
        try:
            from kubernetes import client, config
        except ImportError:
            raise UserError(CLIENT_MISSING) from None
        self.context = context or None
        try:
            self.api_client = config.new_client_from_config(context=self.context)
        except Exception as exc:  # noqa: BLE001  the loader's errors have no common base: a missing file, a bad context
            where = os.environ.get("KUBECONFIG") or "~/.kube/config"
            raise UserError(f"--kubernetes {self.context or ''}: cannot load the kubeconfig ({where}): "
                            f"{str(exc).splitlines()[0][:200]}; set KUBECONFIG or name a context it has".replace(
                                "--kubernetes :", "--kubernetes:")) from None
        if self.context is None:
            _, current = config.list_kube_config_contexts()
            self.context = current["name"]
        self.core = client.CoreV1Api(self.api_client)
        self.networking = client.NetworkingV1Api(self.api_client)

    @property
    def name(self) -> str:
        """What a result names as its engine: kubernetes:<context>."""
        return f"kubernetes:{self.context}"

    @property
    def server(self) -> str:
        return self.api_client.configuration.host

    def call(self, api: str, method: str, *args, **kwargs) -> Any:
        """A generated API method, its answer as JSON (None when it has no body); ApiError or InfraError."""
        import urllib3.exceptions
        from kubernetes.client.exceptions import ApiException

        kwargs.setdefault("_request_timeout", 60)
        try:
            answer = getattr(getattr(self, api), method)(*args, _preload_content=False, **kwargs)
        except ApiException as exc:
            message = exc.reason or ""
            try:
                message = json.loads(exc.body or "{}").get("message") or message
            except ValueError:
                pass
            raise ApiError(f"the Kubernetes API refused {method}: {exc.status} {message}"[:500], exc.status or 0,
                           _reason(exc)) from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise InfraError(f"the Kubernetes API at {self.server} did not answer ({type(exc).__name__}: {exc})"[:500]) \
                from None
        data = answer.data
        return json.loads(data) if data else None

    def exists(self, api: str, method: str, *args) -> bool:
        try:
            self.call(api, method, *args)
        except ApiError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def auth_headers(self) -> dict[str, str]:
        """The headers that authenticate a request as the client does (a websocket needs them by hand)."""
        headers: dict[str, str] = {}
        for setting in (self.api_client.configuration.auth_settings() or {}).values():
            if setting.get("in") == "header" and setting.get("value"):
                headers[setting["key"].lower()] = setting["value"]
        return headers


def _reason(exc) -> str:
    try:
        return json.loads(exc.body or "{}").get("reason") or ""
    except ValueError:
        return ""
