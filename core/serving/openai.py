"""The OpenAI-compatible ``/v1/completions`` protocol, streamed, as pdx uses it.

Every request sends its prompt as token ids (so every engine sees exactly the
same count), ignores EOS, streams, and asks for usage; vLLM also returns the
token ids of each event. Tokens are counted from ids (one per event where the
server sends none), never from text: random weights emit special tokens that
decode to nothing. Anything short of exactly ``max_tokens`` tokens and a
closing ``[DONE]`` is an error recorded on the request.
"""

from __future__ import annotations

import json
import time
from typing import Callable

from pdx.serving.http_stream import StreamLoop, Target, http_request
from pdx.serving.records import RequestRecord

COMPLETIONS_PATH = "/v1/completions"


def _message(body: str) -> str:
    """The error message of a JSON error body (OpenAI or llama-server style), else its first line."""
    try:
        data = json.loads(body)
    except ValueError:
        lines = body.strip().splitlines()
        return lines[0][:200] if lines else "no body"
    error = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(error, dict):
        return str(error.get("message") or error)[:200]
    return str(error)[:200]


class _Exchange:
    """Feeds one streamed response into its :class:`RequestRecord`."""

    def __init__(self, record: RequestRecord, sent_ns: int, on_done: Callable[[RequestRecord], None]) -> None:
        self.record, self.sent_ns, self.on_done = record, sent_ns, on_done
        self.done = False  # saw [DONE]
        self.streamed = False

    def on_response(self, status: int, headers: dict[str, str]) -> None:
        self.record.http_status = status
        self.streamed = status == 200 and headers.get("content-type", "").startswith("text/event-stream")

    def on_event(self, data: str, t_ns: int) -> bool:
        record = self.record
        if data.strip() == "[DONE]":
            self.done = True
            return True
        try:
            event = json.loads(data)
        except ValueError:
            record.fail(f"malformed SSE event: {data[:60]!r}")
            return True
        if not isinstance(event, dict):
            record.fail(f"malformed SSE event: {data[:60]!r}")
            return True
        if "error" in event:
            record.fail(f"server error in stream: {_message(data)}")
            return True
        tokens = 0
        for choice in event.get("choices") or ():
            ids = choice.get("token_ids")
            tokens += len(ids) if isinstance(ids, list) else 1
            record.finish_reason = choice.get("finish_reason") or record.finish_reason
        if tokens:
            offset = t_ns - self.sent_ns
            if record.first_ns is None:
                record.first_ns = offset
            record.events.append((offset, tokens))
        if isinstance(event.get("usage"), dict):
            record.usage = event["usage"]
        if isinstance(event.get("timings"), dict):  # llama-server's own timings
            record.engine["timings"] = event["timings"]
        return False

    def on_end(self, t_ns: int, error: str | None, body: str) -> None:
        record = self.record
        record.end_ns = t_ns - self.sent_ns
        got = f"{record.n_gen} of {record.max_tokens} tokens"
        if error:
            record.fail(f"{error} ({got})")
        elif record.http_status != 200:
            record.fail(f"HTTP {record.http_status}: {_message(body)}")
        elif not self.streamed:
            record.fail("the server answered without an event stream: " + _message(body))
        elif not self.done:
            record.fail(f"the stream ended without [DONE] after {got}")
        elif record.n_gen != record.max_tokens:
            record.fail(f"the stream ended after {got} (finish_reason {record.finish_reason})")
        self.on_done(record)


class CompletionsClient:
    """Sends streamed completions of token-id prompts to one server."""

    def __init__(self, url: str, model: str, api_key: str | None = None, timeout_s: float | None = 600.0,
                 extra_body: dict | None = None) -> None:
        self.target = Target.parse(url)
        self.model = model
        self.timeout_s = timeout_s
        self.extra_body = dict(extra_body or {})
        self.headers = {"Content-Type": "application/json", "Accept": "text/event-stream", "User-Agent": "pdx"}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"

    def body(self, prompt: list[int], max_tokens: int) -> bytes:
        payload = {
            "model": self.model,
            "prompt": prompt,
            "max_tokens": max_tokens,
            "ignore_eos": True,
            "stream": True,
            "stream_options": {"include_usage": True},
            "temperature": 0.0,
        } | self.extra_body
        return json.dumps(payload, separators=(",", ":")).encode()

    def send(self, loop: StreamLoop, record: RequestRecord, prompt: list[int], origin_ns: int,
             on_done: Callable[[RequestRecord], None]) -> None:
        """Start one request on ``loop``; ``on_done(record)`` runs when it is over, ok or not."""
        request = http_request("POST", self.target, COMPLETIONS_PATH, self.body(prompt, record.max_tokens),
                               self.headers)
        sent = time.perf_counter_ns()
        record.send_ns = sent - origin_ns
        loop.open(self.target, request, _Exchange(record, sent, on_done), self.timeout_s)
