"""Work counters: how much a backend asked of its engine, seen from outside it.

The contract suite cannot read an engine's mind, but it can count the work
that passes a boundary it can wrap: the requests a server backend sends,
the ``llama_decode`` calls of an in-process one. A counter is a function
returning a running total in any unit that grows the same for every
repetition of the same test (tokens are the natural one). With a counter,
"warm-up runs are done and never counted" and "depth is filled" are checked
exactly; without one, by the clock.
"""

from __future__ import annotations

from typing import Any, Callable

from pdx.measure.serving.backend import ServerBackend

WorkCounter = Callable[[], int]


def count_calls(owner: Any, name: str, units: Callable[..., int]) -> WorkCounter:
    """Wrap ``owner.name`` so every call adds ``units(*args, **kwargs)``; returns the running total."""
    total = [0]
    original = getattr(owner, name)

    def counting(*args: Any, **kwargs: Any) -> Any:
        total[0] += units(*args, **kwargs)
        return original(*args, **kwargs)

    setattr(owner, name, counting)
    return lambda: total[0]


def default_counter(backend: Any) -> WorkCounter | None:
    """The tokens every server backend's client sends and asks for; None for any other backend
    (a test class gives its own with ``work_counter``)."""
    if isinstance(backend, ServerBackend) and backend.client is not None:
        return count_calls(backend.client, "send",
                           lambda loop, record, prompt, *rest, **kw: len(prompt) + record.max_tokens)
    return None
