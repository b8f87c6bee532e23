"""Small reply helpers of the gateway: JSON, a protocol's error shape, refusals."""
from __future__ import annotations

import json
import logging

from aiohttp import web

from pytest_clawswe.gateway.protocols import Protocol


def _json(status: int, data) -> web.Response:
    return web.json_response(data, status=status, dumps=lambda v: json.dumps(v, separators=(",", ":")))


def _error(protocol: Protocol, status: int, message: str, kind: str) -> web.Response:
    return _json(status, protocol.error_body(message, kind))


def _refuse(response: web.Response) -> web.Response:
    """An answer given before the body was read: the connection closes, the rest is never read."""
    response.force_close()
    return response


def _kind(value) -> str:
    return {list: "array", str: "string", int: "number", float: "number", bool: "boolean"}.get(type(value), "null")


def _zero():
    from pytest_clawswe.usage import Usage

    return Usage()


log = logging.getLogger("clawswe.gateway")
