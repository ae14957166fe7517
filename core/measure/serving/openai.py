"""Streamed completions, as pdx sends them: OpenAI's ``/v1/completions``, and
llama-server's ``/completion`` (a dialect: same client, other field names).

Every request sends its prompt as token ids (so every engine sees exactly the
same count), ignores EOS, streams, and asks for usage; vLLM also returns the
token ids of each event. Tokens are counted from ids (one per event where the
server sends none, reconciled with the server's usage at the end), never from
text: random weights emit special tokens that decode to nothing. Anything short of exactly ``max_tokens`` tokens and a
closing event is an error recorded on the request, and so is a stream whose
token count differs from the server's own (``usage``).
"""

from __future__ import annotations

import json
import time
from typing import Callable

from pdx.measure.serving.http_stream import StreamLoop
from pdx.domain.serving.wire import Target, http_request
from pdx.domain.serving.records import RequestRecord
from pdx.domain.serving.reasoning import Phases

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


def auth_headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


class OpenAICompletions:
    """``POST /v1/completions`` (vLLM and most servers): one event per chunk, usage, ``[DONE]``."""

    path = "/v1/completions"

    def body(self, model: str, prompt: list[int], max_tokens: int) -> dict:
        return {"model": model, "prompt": prompt, "max_tokens": max_tokens, "ignore_eos": True, "stream": True,
                "stream_options": {"include_usage": True}, "temperature": 0.0}

    def read(self, event: dict, record: RequestRecord) -> tuple[int, bool]:
        """(tokens the event carries, whether it ends the stream)."""
        tokens = 0
        for choice in event.get("choices") or ():
            ids = choice.get("token_ids")
            if not isinstance(ids, list):
                record.engine["counted_from"] = "events"
            tokens += len(ids) if isinstance(ids, list) else 1
            record.finish_reason = choice.get("finish_reason") or record.finish_reason
        if isinstance(event.get("usage"), dict):
            record.usage = event["usage"]
        return tokens, False


class TextCompletions(OpenAICompletions):
    """``/v1/completions`` of any OpenAI-compatible server, token ids or not (``pdx bench --backend openai``).

    As :class:`OpenAICompletions`, and one more server habit: llama-server (and others that stream
    text) send the finish in a closing chunk without text or ids after the last token; that chunk
    carries no token, unless none came before it (a token held back to the end).
    """

    def read(self, event: dict, record: RequestRecord) -> tuple[int, bool]:
        choices = event.get("choices") or ()
        closing = [c for c in choices if c.get("finish_reason") and not _text(c) and "token_ids" not in c]
        if closing and len(closing) == len(choices) and record.events:
            record.finish_reason = closing[0]["finish_reason"]
            event = {k: v for k, v in event.items() if k != "choices"}
        # A chat-style chunk that only names the role (a server's first chunk) carries no token.
        choices = [c for c in event.get("choices") or () if not _role_only(c)]
        if "choices" in event:
            event = event | {"choices": choices}
        return super().read(event, record)


def _text(choice: dict) -> str:
    """A choice's text: ``text`` (completions) or its ``delta``'s content and thinking (chat chunks)."""
    delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
    parts = [choice.get("text"), delta.get("content"), delta.get("reasoning_content"), delta.get("reasoning")]
    return "".join(p for p in parts if isinstance(p, str))


def _role_only(choice: dict) -> bool:
    return isinstance(choice.get("delta"), dict) and not _text(choice) and "token_ids" not in choice \
        and not choice.get("finish_reason")


class LlamaServerCompletion:
    """llama-server's own ``POST /completion``: the only one of its endpoints that streams token ids
    (its /v1/completions sends text only, and holds back or merges tokens that are partial UTF-8)."""

    path = "/completion"

    def body(self, model: str, prompt: list[int], max_tokens: int) -> dict:
        return {"prompt": prompt, "n_predict": max_tokens, "ignore_eos": True, "stream": True,
                "return_tokens": True, "temperature": 0.0, "cache_prompt": True}

    def read(self, event: dict, record: RequestRecord) -> tuple[int, bool]:
        # A token that ends mid-UTF-8 is held back and its id never sent; the running count is exact.
        predicted = event.get("tokens_predicted")
        tokens = predicted - record.n_gen if isinstance(predicted, int) else len(event.get("tokens") or ())
        if not event.get("stop"):
            return tokens, False
        record.usage = {"prompt_tokens": event.get("tokens_evaluated"), "completion_tokens": event.get("tokens_predicted"),
                        "cached_tokens": (event.get("timings") or {}).get("cache_n")}
        record.finish_reason = event.get("stop_type") or "stop"
        return tokens, True


class _Exchange:
    """Feeds one streamed response into its :class:`RequestRecord`."""

    def __init__(self, record: RequestRecord, sent_ns: int, dialect, on_done: Callable[[RequestRecord], None]) -> None:
        self.record, self.sent_ns, self.dialect, self.on_done = record, sent_ns, dialect, on_done
        self.done = False  # the stream's end was seen ([DONE], or the dialect's last event)
        self.streamed = False
        self.phases = Phases()

    def on_response(self, status: int, headers: dict[str, str], streamed: bool) -> None:
        self.record.http_status, self.streamed = status, streamed

    def on_event(self, data: str, t_ns: int) -> bool:
        record = self.record
        if data.strip() == "[DONE]":
            self.done = True
            return True
        try:
            event = json.loads(data)
        except ValueError:
            event = None
        if not isinstance(event, dict):
            record.fail(f"malformed SSE event: {data[:60]!r}")
            return True
        if "error" in event:
            record.fail(f"server error in stream: {_message(data)}")
            return True
        tokens, self.done = self.dialect.read(event, record)
        if tokens:
            offset = t_ns - self.sent_ns
            if record.first_ns is None:
                record.first_ns = offset
            record.events.append((offset, tokens))
            record.count_phase(self.phases.phase(event), offset, tokens)
        if isinstance(event.get("timings"), dict):  # llama-server's own timings
            record.engine["timings"] = event["timings"]
        return self.done

    def on_end(self, t_ns: int, error: str | None, body: str) -> None:
        record = self.record
        record.end_ns = t_ns - self.sent_ns
        record.settle_phases()
        counted = record.usage.get("completion_tokens")
        if record.engine.get("counted_from") == "events" and isinstance(counted, int) and record.events \
                and record.n_gen < counted <= record.max_tokens:
            # Without ids, a chunk the server merged (its detokenizer holds back partial words) looks
            # like one token; usage is exact, so the shortfall is booked on the last chunk and noted.
            shortfall = counted - record.n_gen
            arrival, tokens = record.events[-1]
            record.events[-1] = (arrival, tokens + shortfall)
            record.engine["merged_tokens"] = shortfall
        got = f"{record.n_gen} of {record.max_tokens} tokens"
        if error:
            record.fail(f"{error} ({got})")
        elif record.http_status != 200:
            record.fail(f"HTTP {record.http_status}: {_message(body)}")
        elif not self.streamed:
            record.fail("the server answered without an event stream: " + _message(body))
        elif not self.done:
            record.fail(f"the stream ended without its last event after {got}")
        elif record.n_gen != record.max_tokens:
            record.fail(f"the stream ended after {got} (finish_reason {record.finish_reason})")
        elif counted is not None and counted != record.n_gen:
            record.fail(f"the stream carried {record.n_gen} tokens but the server counted {counted}")
        self.on_done(record)


# A request's time limit unless one is given (-o request_timeout): a start, then a floor on the server's
# speed (prefill, decode) for the work ahead of the request, its own and that of every request in flight
# when it is sent (a server may take them one at a time). A server that accepts a request and never
# answers holds pdx that long, not ten minutes, and a long request on a slow server still has its time.
TIMEOUT_BASE_S = 10.0
TIMEOUT_PER_PROMPT_TOKEN_S = 0.1
TIMEOUT_PER_OUTPUT_TOKEN_S = 1.0
TIMEOUT_RULE = (f"{TIMEOUT_BASE_S:g} s + {TIMEOUT_PER_PROMPT_TOKEN_S:g} s per prompt token + "
                f"{TIMEOUT_PER_OUTPUT_TOKEN_S:g} s per generated token, times the requests in flight when it is sent")


def default_timeout_s(n_prompt: int, max_tokens: int, in_flight: int = 1) -> float:
    """How long one request may take when no limit is given (:data:`TIMEOUT_RULE`)."""
    work = n_prompt * TIMEOUT_PER_PROMPT_TOKEN_S + max_tokens * TIMEOUT_PER_OUTPUT_TOKEN_S
    return TIMEOUT_BASE_S + max(1, in_flight) * work


class CompletionsClient:
    """Sends streamed completions of token-id prompts to one server. ``timeout_s``: each request's
    limit; None: :func:`default_timeout_s` of its length."""

    def __init__(self, url: str, model: str, api_key: str | None = None, timeout_s: float | None = None,
                 extra_body: dict | None = None, dialect=None) -> None:
        self.target = Target.parse(url)
        self.dialect = dialect or OpenAICompletions()
        self.model = model
        self.timeout_s = timeout_s
        self.extra_body = dict(extra_body or {})
        self.headers = {"Content-Type": "application/json", "Accept": "text/event-stream", "User-Agent": "pdx"}
        self.headers |= auth_headers(api_key)

    def body(self, prompt: list[int], max_tokens: int) -> bytes:
        payload = self.dialect.body(self.model, prompt, max_tokens) | self.extra_body
        return json.dumps(payload, separators=(",", ":")).encode()

    def send(self, loop: StreamLoop, record: RequestRecord, prompt: list[int], origin_ns: int,
             on_done: Callable[[RequestRecord], None]) -> None:
        """Start one request on ``loop``; ``on_done(record)`` runs when it is over, ok or not."""
        request = http_request("POST", self.target, self.dialect.path, self.body(prompt, record.max_tokens),
                               self.headers)
        sent = time.perf_counter_ns()
        record.send_ns = sent - origin_ns
        timeout_s = self.timeout_s or default_timeout_s(record.n_prompt, record.max_tokens, len(loop.streams) + 1)
        loop.open(self.target, request, _Exchange(record, sent, self.dialect, on_done), timeout_s)
