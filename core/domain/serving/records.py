"""Requests that failed, as errors that carry their records (the records themselves are the contract's:
:class:`pdx.contract.request.RequestRecord`, re-exported here where serving code imports it)."""

from __future__ import annotations

from pdx.contract.request import RequestRecord, per_token_gaps  # noqa: F401
from pdx.contract.errors import PdxError


class RequestsFailed(PdxError):
    """Some requests of a test failed; their records travel with the error to the registry."""

    def __init__(self, message: str, requests: list[RequestRecord] = ()) -> None:
        super().__init__(message)
        self.requests = list(requests)


class TokensInOneBurst(RequestsFailed):
    """Every request succeeded, but its tokens arrived in one read: no decode time to measure. Mostly
    passing (a client starved of CPU by the server's threads on a small machine), so it is retried."""


def failure_summary(records: list[RequestRecord]) -> str | None:
    """``3 of 16 requests failed: <first error>``, or None when all succeeded."""
    failed = [r for r in records if not r.ok]
    if not failed:
        return None
    return f"{len(failed)} of {len(records)} requests failed: {failed[0].error}"
