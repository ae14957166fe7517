"""What pdx keeps of every request it sends: the raw record, not a summary.

Times are integers in nanoseconds. ``send_ns`` and ``scheduled_ns`` are
measured from the start of the load run the request belongs to; every other
time from the request's own send. ``scheduled_ns`` is when the arrival
process meant the request to go (open loop); it is later sent when a slot
is free, so the gap is latency its user sees (the dispatch delay), and the
``*_sched_ns`` figures count from it. Closed-loop requests have no schedule
(None): they go when a slot frees, by definition. ``events`` holds one ``(arrival_ns, tokens)`` pair per streamed event:
the arrival of every token (an event may carry several, as with speculative
decoding). TTFT, ITL, TPOT and E2EL are derived from these, never stored in
their place.

A reasoning model's stream is split in two phases (:mod:`pdx.domain.serving.reasoning`): thinking, then the
answer. ``reasoning_ns`` and ``answer_ns`` are the first token of each (from send) and
``n_reasoning`` the thinking tokens; all three stay None for a stream with no thinking, whose
first token is its first answer token. TTFT keeps its meaning, the first token of any kind;
TTFAT (:attr:`RequestRecord.ttfat_ns`) is the first answer token's.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class RequestRecord:
    idx: int  # order of sending within its load run
    n_prompt: int  # prompt tokens sent
    max_tokens: int  # tokens asked for (generation ignores EOS, so also those expected)
    role: str = "load"  # what the request is for in its scenario: load, steady, intruder, cold, warm...
    send_ns: int = 0  # from the start of the load run
    scheduled_ns: int | None = None  # when it was due (open loop), from the start of the load run
    first_ns: int | None = None  # first token, from send
    end_ns: int | None = None  # stream over (or failed), from send
    events: list[tuple[int, int]] = field(default_factory=list)  # (arrival from send, tokens in the event)
    status: str = "ok"  # ok or error
    error: str | None = None
    http_status: int | None = None
    finish_reason: str | None = None
    usage: dict = field(default_factory=dict)  # the server's own counts (prompt, completion, cached tokens)
    engine: dict = field(default_factory=dict)  # the server's own figures for this request (timings...)
    shard: int | None = None  # which of several client processes sent it (serve-bench --clients N); None: one
    reasoning_ns: int | None = None  # first thinking token, from send; None: no thinking
    answer_ns: int | None = None  # first answer token, from send, of a stream that thought
    n_reasoning: int | None = None  # thinking tokens; None: no thinking

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def n_gen(self) -> int:
        """Tokens received, counted from the stream (ids), never from text."""
        return sum(n for _, n in self.events)

    @property
    def cached_tokens(self) -> int | None:
        """Prompt tokens the server took from its prefix cache, where its usage says
        (OpenAI's ``prompt_tokens_details``, llama-server's ``cache_n``)."""
        details = self.usage.get("prompt_tokens_details")
        value = self.usage.get("cached_tokens", details.get("cached_tokens") if isinstance(details, dict) else None)
        return value if isinstance(value, int) else None

    @property
    def ttft_ns(self) -> int | None:
        return self.first_ns

    @property
    def n_answer(self) -> int:
        """Answer tokens: all tokens but the thinking ones."""
        return self.n_gen - (self.n_reasoning or 0)

    @property
    def ttfat_ns(self) -> int | None:
        """Time to first answer token (TTFAT): send to the first token after the thinking; TTFT for a
        stream without thinking. None where the answer never began."""
        return self.answer_ns if self.n_reasoning else self.first_ns

    @property
    def reasoning_rate(self) -> float | None:
        """Thinking tokens per second: the thinking tokens after the first over the time from the first
        thinking token to the first answer token (the end, where no answer came)."""
        if not self.n_reasoning or self.n_reasoning < 2 or self.reasoning_ns is None:
            return None
        until = self.answer_ns if self.answer_ns is not None else self.end_ns
        span = (until or 0) - self.reasoning_ns
        return (self.n_reasoning - 1) * 1e9 / span if span > 0 else None

    @property
    def answer_rate(self) -> float | None:
        """Answer tokens per second of a stream that thought: answer tokens after the first over the
        first answer token to the last token."""
        if not self.n_reasoning or self.answer_ns is None or self.n_answer < 2 or not self.events:
            return None
        span = self.events[-1][0] - self.answer_ns
        return (self.n_answer - 1) * 1e9 / span if span > 0 else None

    def count_phase(self, phase: str, offset_ns: int, tokens: int) -> None:
        """Book an event's ``tokens`` (already in :attr:`events`) on thinking or the answer
        (:mod:`pdx.domain.serving.reasoning`'s phases, by name: the contract imports nothing above it)."""
        if phase == "answer":
            if self.answer_ns is None:
                self.answer_ns = offset_ns
            return
        if phase == "reasoning from the start":  # a closing tag: everything before it was thinking
            self.reasoning_ns, self.answer_ns, self.n_reasoning = self.first_ns, None, self.n_gen
            return
        if self.reasoning_ns is None:
            self.reasoning_ns = offset_ns
        self.n_reasoning = (self.n_reasoning or 0) + tokens

    def settle_phases(self) -> None:
        """A stream that never thought keeps no phase figures (its TTFAT is its TTFT)."""
        if not self.n_reasoning:
            self.reasoning_ns = self.answer_ns = self.n_reasoning = None

    @property
    def dispatch_ns(self) -> int:
        """How long the request waited past its scheduled time (for a slot, or the client)."""
        return max(0, self.send_ns - self.scheduled_ns) if self.scheduled_ns is not None else 0

    @property
    def ttft_sched_ns(self) -> int | None:
        """TTFT from the scheduled send: what the user who arrived then waited."""
        return self.first_ns + self.dispatch_ns if self.first_ns is not None else None

    @property
    def e2el_sched_ns(self) -> int | None:
        return self.end_ns + self.dispatch_ns if self.end_ns is not None else None

    @property
    def chunk_gaps_ns(self) -> list[int]:
        """Gaps between successive events, one per streamed chunk (vLLM's ITL as ``vllm bench serve`` counts it)."""
        times = [t for t, _ in self.events]
        return [b - a for a, b in zip(times, times[1:])]

    @property
    def itl_ns(self) -> list[float]:
        """Per-token gaps: a chunk of k tokens after a gap g stands for k gaps of g / k, so
        a stream that merges tokens into chunks gives the same ITL as one that does not.
        (Tokens that came with the first chunk are in no gap: they arrived at TTFT.)"""
        return per_token_gaps(self.events)

    @property
    def decode_ns(self) -> int | None:
        """First token to last token: the time of ``n_gen - 1`` decode steps."""
        if len(self.events) < 2:
            return None
        return self.events[-1][0] - self.events[0][0]

    @property
    def tpot_ns(self) -> float | None:
        """(E2EL - TTFT) / (tokens - 1), as vLLM defines it."""
        if self.end_ns is None or self.first_ns is None or self.n_gen < 2:
            return None
        return (self.end_ns - self.first_ns) / (self.n_gen - 1)

    def fail(self, error: str) -> None:
        if self.status == "ok":
            self.status, self.error = "error", error

    def to_dict(self) -> dict:
        data = asdict(self)
        data["events"] = [list(e) for e in self.events]
        data["n_gen"] = self.n_gen
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "RequestRecord":
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        known["events"] = [tuple(e) for e in known.get("events") or []]
        return cls(**known)


def per_token_gaps(events) -> list[float]:
    """The per-token gaps of a stream's ``(arrival, tokens)`` events (see ``RequestRecord.itl_ns``)."""
    gaps: list[float] = []
    for (a, _), (b, n) in zip(events, events[1:]):
        gaps.extend([(b - a) / n] * n if n > 0 else [])
    return gaps
