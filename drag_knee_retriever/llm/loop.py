"""One background event loop for the synchronous ``describe`` of the summariser."""

from __future__ import annotations

import asyncio
import threading
from typing import Awaitable, Optional, TypeVar

T = TypeVar("T")


class LoopThread:
    """One event loop in a daemon thread, kept for the summariser's life.

    ``describe`` is synchronous but the fan-out is async. Running every call on one persistent loop
    (instead of ``asyncio.run`` per call) works whether or not the caller's thread already runs a
    loop (Jupyter, an async web handler, a worker thread), and keeps async clients of remote models
    (httpx pools) bound to the same loop from one call to the next.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._thread: Optional[threading.Thread] = None

    def run(self, coro: Awaitable[T]) -> T:
        loop = self._ensure()
        if threading.current_thread() is self._thread:
            # Blocking on our own loop would deadlock.
            close = getattr(coro, "close", None)
            if close:
                close()
            raise RuntimeError(
                "describe() was called from inside the summariser's own event loop; "
                "use `await summarizer.adescribe(requests)` there instead."
            )
        future = asyncio.run_coroutine_threadsafe(coro, loop)  # type: ignore[arg-type]
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    def _ensure(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed() or not (self._thread and self._thread.is_alive()):
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=self._serve, args=(loop,), name="drag-knee-llm", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    @staticmethod
    def _serve(loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
            finally:
                loop.close()

    def close(self) -> None:
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(loop.stop)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10)
