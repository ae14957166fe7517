"""A local OpenAI-style completions server that streams tokens on a known schedule.

A test double for what a real server cannot be made to do on demand: emit
tokens at exact times (so the client's timing error can be measured against
the send times it logs), and fail in chosen ways. The streams follow the
shape of vLLM's (checked against a real ``vllm serve`` in tests/test_vllm.py):
chunked ``text/event-stream``, one ``data: {...}`` event per token with
``token_ids``, a usage event, then ``data: [DONE]``.

The request body's ``fake`` field (or a model name ``fake-MODE``) picks a behaviour: ``ok`` (default),
``http400``, ``http500``, ``early`` (stops at half the tokens, then [DONE]),
``drop`` (closes the connection mid-stream), ``malformed`` (a non-JSON data
line), ``error`` (an error event mid-stream), ``hang`` (one token, then
silence), ``miscount`` (usage claims one token more than were sent), ``nan-usage`` (its completion
tokens NaN), ``negative-usage`` (its prompt tokens -5), ``merged`` (no token ids,
and one chunk carries two tokens), ``closing`` (as llama-server's /v1/completions: no token ids, and
the finish in a closing chunk without text), ``closing-merged`` (and one chunk carries two tokens),
``closing-merged-nousage`` (and no usage event), ``burst`` (every event of a request in one write, as a
client starved of CPU reads them), ``burst-odd`` (the 1st, 3rd, ... request of more than one token so),
``reasoning`` (replays a reasoning model's chat stream as vLLM's reasoning parser sends it,
tests/data/reasoning/: ``reasoning_content`` deltas, then ``content``; ``max_tokens`` must be its 30),
``think-inline`` (the first half of the tokens' text a ``<think>...</think>`` span, as a server without a
reasoning parser streams it), ``think-close`` (the same, the opening tag left to the prompt's template).
``ttft`` and ``itl`` (seconds) override the server's schedule. ``--slots N`` serves N streams at a time
and queues the rest (their TTFT grows with the queue, as a saturated server's does).
``GET /sends`` returns every event's send time (perf_counter_ns) keyed by the
prompt's first token id.

Run: ``python tests/fake_openai_server.py [--ttft S] [--itl S]``; it prints
``port N`` when listening.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

SENDS: dict[int, list[int]] = {}
REASONING_STREAM = Path(__file__).parent / "data" / "reasoning" / "vllm_deepseek_r1_chat_stream.jsonl"


def _event(payload: dict | str) -> bytes:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    text = f"data: {data}\n\n".encode()
    return f"{len(text):x}\r\n".encode() + text + b"\r\n"


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str, dict, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        key, _, value = line.partition(":")
        if key:
            headers[key.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return method, path, headers, body


def _plain(writer: asyncio.StreamWriter, status: int, body: dict) -> None:
    data = json.dumps(body).encode()
    writer.write(f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                 f"Connection: close\r\n\r\n".encode() + data)


def _mode(body: dict) -> str:
    model = str(body.get("model") or "")
    return body.get("fake") or (model.split("fake-", 1)[1] if model.startswith("fake-") else "ok")


SLOTS: list[asyncio.Semaphore] = []  # --slots: one semaphore, made in the server's loop
STREAMED = {"burst-odd": 0}  # requests of more than one token served in burst-odd mode


async def _stream(writer: asyncio.StreamWriter, body: dict, ttft: float, itl: float) -> None:
    if SLOTS:
        async with SLOTS[0]:
            await _stream_now(writer, body, ttft, itl)
    else:
        await _stream_now(writer, body, ttft, itl)


async def _stream_now(writer: asyncio.StreamWriter, body: dict, ttft: float, itl: float) -> None:
    mode = _mode(body)
    prompt, n = body["prompt"], int(body["max_tokens"])
    key = int(prompt[0]) if prompt else -1
    sends = SENDS.setdefault(key, [])
    sent = 0
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
                 b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
    loop = asyncio.get_running_loop()
    start = loop.time()
    if mode == "burst-odd" and n > 1:
        STREAMED[mode] += 1
        mode = "burst" if STREAMED[mode] % 2 else "ok"
    if mode == "reasoning":
        await _replay(writer, body, ttft, itl)
        return
    held = []  # burst: the events, written at once at the end
    write = held.append if mode == "burst" else writer.write
    for i in range(n):
        if writer.is_closing() or writer.transport.get_write_buffer_size() > 1 << 20:
            return  # the client went away
        await asyncio.sleep(max(0.0, start + float(body.get("ttft", ttft)) + i * float(body.get("itl", itl))
                                - loop.time()))
        if mode == "early" and i == n // 2:
            break
        if mode == "drop" and i == n // 2:
            writer.transport.abort()
            return
        if mode == "malformed" and i == n // 2:
            writer.write(_event("{not json"))
            continue
        if mode == "error" and i == n // 2:
            writer.write(_event({"error": {"message": "EngineCore encountered an issue", "code": 500}}))
            continue
        if mode == "hang" and i == 1:
            await asyncio.sleep(3600)
        text = f" t{i}"
        if mode.startswith("think"):  # thinking for the first half, the tags on its first and last token
            text = ("<think>" if i == 0 and mode == "think-inline" else "</think>" if i == n // 2 - 1 else
                    " thought" if i < n // 2 else " answer")
        choice = {"index": 0, "text": text, "token_ids": [3 + i % 100],
                  "finish_reason": "length" if i == n - 1 else None}
        if "merged" in mode or mode.startswith("closing"):
            del choice["token_ids"]
        if "merged" in mode and i == n // 2:  # this token's text comes with the next one's
            sent += 1
            continue
        if mode.startswith("closing"):  # the finish comes in a chunk of its own, without text
            choice["finish_reason"] = None
        data = _event({"id": f"cmpl-{key}", "object": "text_completion", "choices": [choice]})
        sends.append(time.perf_counter_ns())
        write(data)
        sent += 1
    sent += mode == "miscount"
    if mode.startswith("closing"):
        write(_event({"id": f"cmpl-{key}", "choices": [{"index": 0, "text": "", "finish_reason": "length"}]}))
    usage = {"prompt_tokens": len(prompt), "completion_tokens": sent, "total_tokens": len(prompt) + sent}
    if mode == "nan-usage":
        usage["completion_tokens"] = float("nan")  # json.dumps writes NaN, which no JSON parser need accept
    elif mode == "negative-usage":
        usage["prompt_tokens"] = -5
    if "nousage" not in mode:
        write(_event({"id": f"cmpl-{key}", "choices": [], "usage": usage}))
    writer.write(b"".join(held) + _event("[DONE]") + b"0\r\n\r\n")
    await writer.drain()


async def _replay(writer: asyncio.StreamWriter, body: dict, ttft: float, itl: float) -> None:
    """The recorded reasoning stream, one event per ``itl`` after ``ttft``."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    for i, line in enumerate(REASONING_STREAM.read_text().splitlines()):
        await asyncio.sleep(max(0.0, start + float(body.get("ttft", ttft)) + i * float(body.get("itl", itl))
                                - loop.time()))
        writer.write(_event(line))
    writer.write(_event("[DONE]") + b"0\r\n\r\n")
    await writer.drain()


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, ttft: float, itl: float) -> None:
    try:
        method, path, headers, raw = await _read_request(reader)
        if path == "/health":
            _plain(writer, 200, {})
        elif path == "/sends":
            _plain(writer, 200, SENDS)
        elif path == "/v1/models":
            _plain(writer, 200, {"data": [{"id": "fake", "max_model_len": 65536}]})
        elif path in ("/v1/completions", "/v1/chat/completions") and method == "POST":
            body = json.loads(raw)
            if _mode(body) in ("http400", "http500"):
                status = int(_mode(body)[4:])
                _plain(writer, status, {"error": {"message": f"fake {status} error", "code": status}})
            else:
                await _stream(writer, body, ttft, itl)
        else:
            _plain(writer, 404, {"error": {"message": f"no route {path}"}})
        await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def serve(port: int, ttft: float, itl: float, tls: tuple[str, str] | None = None, slots: int = 0) -> None:
    if slots:
        SLOTS.append(asyncio.Semaphore(slots))
    context = None
    if tls:
        import ssl

        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(*tls)
    server = await asyncio.start_server(lambda r, w: _handle(r, w, ttft, itl), "127.0.0.1", port, backlog=1024,
                                        ssl=context)
    print(f"port {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--ttft", type=float, default=0.02)
    parser.add_argument("--itl", type=float, default=0.01)
    parser.add_argument("--slots", type=int, default=0, help="streams served at a time (0: all)")
    parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"), help="serve https with this certificate")
    args = parser.parse_args(argv)
    try:
        asyncio.run(serve(args.port, args.ttft, args.itl, args.tls, args.slots))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
