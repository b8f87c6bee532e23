"""An answer passed back to the harness as it arrives, its usage read out on the way (a mixin of the Gateway)."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
from aiohttp import web
from multidict import CIMultiDict

from pytest_clawswe.gateway import fastjson
from pytest_clawswe.gateway.protocols import CHAT, provider_cost_of, sse
from pytest_clawswe.gateway.service.replies import log
from pytest_clawswe.gateway.upstream import failures, stream_redact


class AnswerPassing:
    """An answer passed back to the harness as it arrives, its usage read out on the way (a mixin of the Gateway)."""

    async def _relay(self, request, protocol, status, headers, chunks: AsyncIterator[bytes], hide_usage: bool,
                     forms, shape=None, collector=None, share=None, drain=None):
        """Pass an answer on to the harness and read its usage: (response, status, usage, error)."""
        scrub = forms.scrub_wire if forms else _unchanged  # a provider error may echo the key: it must not reach a container
        headers = CIMultiDict(headers)
        if not headers.get("Content-Type", "").startswith("text/event-stream"):
            return await self._pass_plain(request, protocol, status, headers, chunks, forms, scrub, shape)
        return await self._pass_stream(request, protocol, status, headers, chunks, hide_usage, forms, scrub,
                                       collector, share, drain)

    @staticmethod
    async def _pass_plain(request, protocol, status, headers, chunks, forms, scrub, shape):
        """An answer in one piece: read whole, its usage (and reasoning to remember) read out, passed on."""
        data = b"".join([c async for c in chunks])
        usage, error = None, None
        if forms:  # the scripted model's answers are never failures
            request["clawswe_failure"] = failures.of_answer(status, scrub(data))
        try:
            obj = fastjson.loads(data)
            if isinstance(obj, dict) and status < 400:
                usage = protocol.usage_from_body(obj)
                request["clawswe_provider_cost"] = provider_cost_of(obj.get("usage"))
                if shape is not None and protocol is CHAT:
                    for choice in obj.get("choices") or []:
                        shape.remember((choice or {}).get("message"))
        except ValueError:
            error = "response is not JSON" if status < 400 else None
        if status >= 400:
            error = f"upstream status {status}"
        return web.Response(status=status, body=scrub(data), headers=headers), status, usage, error

    async def _pass_stream(self, request, protocol, status, headers, chunks, hide_usage, forms, scrub, collector,
                           share, drain):
        """A streamed answer passed on event by event (its last bytes held back), its usage read on the way."""
        response = web.StreamResponse(status=status, headers=headers)
        if self.recorder.on:
            response["trajectory_sent"] = []  # trajectory: the bytes the harness got, for the recorder
        reader, splitter = protocol.stream_reader(), sse.Splitter()
        # the key split over events: followed in the text the harness joins (stream_redact.py)
        guard = stream_redact.guard_for(protocol.name, forms or None)
        error = None
        # the answer's last bytes are held back: they go out once its ledger line is on disk (model_request), so
        # a harness never holds a whole answer the ledger could lose (a gateway worker killed in between)
        held = b""
        try:
            try:
                await response.prepare(request)
            except ConnectionError as exc:
                raise _ClientGone from exc
            async for chunk in chunks:
                # the events of one chunk go out in one write: one send, not one per event
                raws = splitter.feed_raw(chunk)
                data = await self._pass_events(reader, guard.events(raws) if guard else raws, hide_usage, scrub,
                                               collector, share)
                if data:
                    await _send(response, held)
                    held = data
            raws = [e.raw for e in splitter.close()]
            if guard:
                raws = guard.events(raws) + guard.finish()
            data = await self._pass_events(reader, raws, hide_usage, scrub, collector, share)
            if data:
                await _send(response, held)
                held = data
            if collector is not None:  # before the end goes out: the harness's next turn may follow at once
                collector.finish()
                if share is not None:
                    await share()
            response[HELD] = held
        except _ClientGone:  # the harness hung up; leaving here stops reading the upstream too
            status, error = CLIENT_GONE, "client disconnected"
            try:  # but what the provider already sent is counted: its usage may be in it
                for event in splitter.feed(drain() if drain else b"") + splitter.close():
                    reader.feed(event)
            except Exception:
                log.warning("could not read usage from the rest of a %s answer", protocol.name)
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            error = f"upstream stream broke: {type(exc).__name__}"
            response[HELD] = held
        if reader.failure is not None:
            request["clawswe_failure"] = reader.failure
        request["clawswe_provider_cost"] = reader.provider_cost
        return response, status, reader.usage, error

    @staticmethod
    async def end_stream(response: web.StreamResponse) -> None:
        """Send a streamed answer's held-back end (its ledger line is on disk now) and close it."""
        try:
            await _send(response, response.pop(HELD, b""))
            await response.write_eof()  # a second call is a no-op
        except (ConnectionError, _ClientGone):
            pass  # the harness hung up once it had every event it waited for (SDKs close at the last one)

    @staticmethod
    async def _pass_events(reader, raws: list[bytes], hide_usage, scrub, collector=None, share=None) -> bytes:
        """The bytes of these events to pass on (scrubbed), their usage and failures read on the way."""
        out = []
        for raw in raws:
            # read only for its usage or an error: the rest passes unread
            if collector is None and b'"usage"' not in raw and b'error' not in raw:
                out.append(raw)
                continue
            event = sse.Event(raw)
            try:
                if b'error' in raw:  # an error event, or a chunk carrying an error object (mid-stream failure)
                    reader.failure = failures.of_event(event.json()) or reader.failure
                reader.feed(event)
                if collector is not None:
                    collector.feed(event.json())
            except Exception:  # an odd event must not break the answer; it only costs its count
                log.warning("could not read usage from a %s event", reader.protocol.name)
            if hide_usage and event.mentions(b'"usage"') and CHAT.is_unrequested_usage_chunk(event.json()):
                continue
            out.append(event.raw)
        if collector is not None and collector.done:  # remembered before the harness can see the end and go on
            collector.finish()
            if share is not None:
                await share()
        return scrub(b"".join(out)) if out else b""


async def _send(response: web.StreamResponse, data: bytes) -> None:
    if not data:
        return
    sent = response.get("trajectory_sent")
    if sent is not None:  # trajectory: kept for the recorder (a reference, no copy)
        sent.append(data)
    try:
        await response.write(data)
    except ConnectionError as exc:
        raise _ClientGone from exc


HELD = "clawswe_held"  # a streamed response's key: its end, sent once the ledger line is on disk


# the provider's response headers a client needs, and no others: what it reads to parse the answer, to
# back off (the SDKs' retry logic), to quote in a bug report, and the rate-limit figures (prefixes)
FORWARD_RESPONSE = frozenset({"content-type", "cache-control", "retry-after", "retry-after-ms", "x-should-retry",
                              "x-request-id", "request-id"})


FORWARD_RESPONSE_PREFIXES = ("x-ratelimit-", "anthropic-ratelimit-")


CLIENT_GONE = 499  # status recorded when the harness hung up before the answer was complete


class _ClientGone(Exception):
    pass


def _unchanged(data: bytes) -> bytes:
    return data


def _response_headers(headers, forms) -> CIMultiDict:
    """The allow-listed headers of a provider's answer; one that holds the key in any form is dropped."""
    out: CIMultiDict = CIMultiDict()
    for name, value in headers.items():
        lower = name.lower()
        if (lower in FORWARD_RESPONSE or lower.startswith(FORWARD_RESPONSE_PREFIXES)) and not forms.found_in(value):
            out.add(name, value)
    return out
