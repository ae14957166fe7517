"""Work spread over processes that never re-run the caller's main module.

multiprocessing's spawn imports the calling program's main module in every worker (a script
without a ``__main__`` guard runs again there), and a fork copies a process whose other threads
(a chart renderer's) may hold locks. A pdx worker is a fresh interpreter running this module,
as the chart workers are (:mod:`pdx.reports.charts.worker`): it reads tasks and writes results
as length-prefixed pickles on its pipes. Only pdx's own code is pickled across them.

    for result in ordered_map("pdx.x:work", chunks, workers=2, setup="pdx.x:start", setup_args=(...,)):
        ...
"""

from __future__ import annotations

import importlib
import itertools
import pickle
import queue
import struct
import subprocess
import sys
import threading
from typing import Iterable, Iterator

_HEADER = struct.Struct("<Q")
_STOP = None
_END = object()
# Tasks given to a worker ahead of the result being read: enough to keep it busy, and a bound on
# what waits in memory.
AHEAD = 2


def _function(name: str):
    module, _, attribute = name.partition(":")
    return getattr(importlib.import_module(module), attribute)


def _write(stream, value) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)))
    stream.write(data)
    stream.flush()


def _read(stream):
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        raise EOFError
    (size,) = _HEADER.unpack(head)
    return pickle.loads(stream.read(size))


class WorkerFailed(RuntimeError):
    """A worker process raised, or died; carries the worker's exception type name and message."""


def _failure(exc: BaseException):
    """What a worker sends back for an exception: the exception itself where it pickles."""
    try:
        pickle.loads(pickle.dumps(exc))
        return ("error", exc)
    except Exception:  # an exception that does not survive pickling arrives as its type and text
        return ("error", WorkerFailed(f"{type(exc).__name__}: {exc}"))


def serve(stdin=None, stdout=None) -> None:
    """A worker's loop: a setup (function name, args), then (function name, task) until the end."""
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    setup, args = _read(stdin)
    if setup:
        _function(setup)(*args)
    while True:
        try:
            message = _read(stdin)
        except EOFError:
            return
        if message is _STOP:
            return
        name, task = message
        try:
            _write(stdout, ("ok", _function(name)(task)))
        except Exception as exc:
            _write(stdout, _failure(exc))


class Worker:
    """One worker process: :meth:`submit` tasks, read their results in order with :meth:`result`
    (a worker that died raises :class:`WorkerFailed` there, and only there)."""

    def __init__(self, setup: str | None = None, setup_args: tuple = ()) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "pdx.base.workers"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE)
        self.tasks: queue.Queue = queue.Queue()
        self.sender = threading.Thread(target=self._send, daemon=True)
        self.tasks.put((setup, setup_args))
        self.sender.start()

    def submit(self, function: str, task) -> None:
        """Run ``function`` ("module:name") of ``task`` in the worker, after what was submitted before."""
        self.tasks.put((function, task))

    def _send(self) -> None:
        # Its own thread: a task written while the worker writes a large result never waits on it.
        try:
            while True:
                message = self.tasks.get()
                _write(self.process.stdin, message)
                if message is _STOP:
                    break
        except (BrokenPipeError, OSError):
            pass  # the worker died: reading its result says so
        finally:
            try:
                self.process.stdin.close()
            except OSError:
                pass

    def result(self):
        try:
            status, value = _read(self.process.stdout)
        except (EOFError, pickle.UnpicklingError) as exc:
            code = self.process.wait()
            raise WorkerFailed(f"a pdx worker process ended (exit {code})") from exc
        if status == "error":
            raise value
        return value

    def close(self) -> None:
        self.tasks.put(_STOP)
        self.sender.join(timeout=5)
        try:
            self.process.stdout.close()
        finally:
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait()


def ordered_map(function: str, tasks: Iterable, workers: int, setup: str | None = None,
                setup_args: tuple = ()) -> Iterator:
    """``function`` ("module:name") of each task, in ``workers`` processes, results in the tasks'
    order. ``setup`` ("module:name") runs once in each worker with ``setup_args`` first. An
    exception a task raises is raised here, and the workers are stopped."""
    pool = [Worker(setup, setup_args) for _ in range(workers)]
    try:
        pending = iter(tasks)
        given = 0  # task k goes to worker k % workers, so its results come back in the tasks' order
        for _ in range(workers * AHEAD):
            task = next(pending, _END)
            if task is _END:
                break
            pool[given % workers].submit(function, task)
            given += 1
        for index in itertools.count():
            if index >= given:
                return
            result = pool[index % workers].result()
            task = next(pending, _END)
            if task is not _END:
                pool[given % workers].submit(function, task)
                given += 1
            yield result
    finally:
        for worker in pool:
            worker.close()


def chunked(function: str, items: list, workers: int, size: int, setup: str | None = None,
            setup_args: tuple = ()) -> Iterator:
    """``function`` ("module:name", from a list to a list) over ``items`` in chunks of ``size``,
    results flattened in order; in this process when ``workers`` is 1 (fewer items than a worker's
    start is worth)."""
    chunks = (items[start:start + size] for start in range(0, len(items), size))
    if workers <= 1:
        if setup:
            _function(setup)(*setup_args)
        results = map(_function(function), chunks)
    else:
        results = ordered_map(function, chunks, workers, setup, setup_args)
    for result in results:
        yield from result


if __name__ == "__main__":
    serve()
