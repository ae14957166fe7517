"""Ctrl-C at a chosen moment: SIGINT to the main thread while a backend runs.

A real signal, not a flag: like a user's Ctrl-C it interrupts a blocking
system call (a ``select`` on a server's stream, a ``wait`` on llama-bench)
as well as Python code. It is sent only while the run is in progress, and
the handler is Python's default for the duration, whatever pytest or the
caller installed.
"""

from __future__ import annotations

import _thread
import signal
import threading
import time
from typing import Callable, Iterator


def interrupt_during(start: Callable[[], Iterator], after_s: float) -> tuple[bool, bool]:
    """Consume the iterator ``start()`` returns, sending SIGINT after ``after_s`` seconds.

    Returns (the signal was sent, KeyboardInterrupt came out of the iteration)."""
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("interrupt_during runs in the main thread (signals are delivered there)")
    main = threading.main_thread().ident
    assert main is not None, "the main thread has started"
    lock = threading.Lock()
    state = {"done": False, "fired": False}

    def fire() -> None:
        with lock:
            if state["done"]:
                return
            state["fired"] = True
            if hasattr(signal, "pthread_kill"):
                signal.pthread_kill(main, signal.SIGINT)
            else:
                _thread.interrupt_main()

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(after_s, fire)
    raised = False
    try:
        try:
            iterator = start()
            timer.start()
            try:
                for _ in iterator:
                    pass
            finally:
                close = getattr(iterator, "close", None)
                if close:
                    close()
        except KeyboardInterrupt:
            raised = True
        finally:
            with lock:
                state["done"] = True
            timer.cancel()
        if state["fired"] and not raised:
            time.sleep(0.1)  # a signal sent as the run ended lands here, before the handler is restored
    except KeyboardInterrupt:  # it landed after the run had ended
        pass
    finally:
        signal.signal(signal.SIGINT, previous)
    return state["fired"], raised
