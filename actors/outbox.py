"""Coalescing of messages between two actors: one Ray call per event-loop turn, not per message.

A Ray call costs far more than the work of one logical message, so everything one actor sends
to the same method of another actor during one turn of its event loop travels as a single list.
The receiving method handles the list item by item in order, so each logical message sees what
it would have seen alone; only the Ray overhead is shared.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Coroutine
from typing import Any

from ray.actor import ActorMethod


class Outbox:
    """Messages to one remote method that takes a list (and, for `call`, returns a list)."""

    __slots__ = ("_futures", "_items", "_method", "_pending", "errors")

    def __init__(self, method: ActorMethod, errors: list[BaseException]) -> None:
        self._method = method
        self._items: list[Any] = []
        self._futures: list[asyncio.Future] = []
        self._pending = False
        self.errors = errors
        """Shared with the owning actor, which raises the first one when the driver polls it:
        a failed one-way message must stop the run, not vanish in a log."""

    def post(self, item: Any) -> None:
        """One-way message; the remote method's answer is ignored."""
        self._items.append(item)
        self._schedule()

    def call(self, item: Any) -> asyncio.Future:
        """Request and reply: resolves to this item's element of the batched answer.

        Do not mix with `post` on the same Outbox: the answers are matched by position.
        """
        future = asyncio.get_running_loop().create_future()
        self._items.append(item)
        self._futures.append(future)
        self._schedule()
        return future

    def _schedule(self) -> None:
        if not self._pending:
            self._pending = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        items, self._items = self._items, []
        futures, self._futures = self._futures, []
        self._pending = False
        # A tuple, not a list: Ray encodes a list item by item (one pickle per tuple in it), a
        # tuple as one pickle, several times cheaper for a batch of small tuples.
        reply = self._method.remote(tuple(items)).as_future()
        reply.add_done_callback(functools.partial(self._settle, futures))

    def _settle(self, futures: list[asyncio.Future], reply: asyncio.Future) -> None:
        error = reply.exception()
        if error is not None:
            self.errors.append(error)
            for future in futures:
                future.set_exception(error)
            return
        if futures:
            for future, answer in zip(futures, reply.result(), strict=True):
                future.set_result(answer)


_running: set[asyncio.Task] = set()


def spawn(coroutine: Coroutine[Any, Any, None], errors: list[BaseException]) -> asyncio.Task:
    """Run one logical call as its own task, kept alive until it ends; a failure goes to
    `errors` (see `Outbox.errors`) rather than to a log nobody reads."""
    task = asyncio.ensure_future(coroutine)
    _running.add(task)

    def done(task: asyncio.Task) -> None:
        _running.discard(task)
        if not task.cancelled() and task.exception() is not None:
            errors.append(task.exception())

    task.add_done_callback(done)
    return task


class Checked:
    """Base of every actor: failures of one-way messages and spawned tasks collect in `errors`,
    and `check` (called by the driver on every poll) raises the first, so the run stops."""

    def __init__(self) -> None:
        self.errors: list[BaseException] = []

    def raise_failure(self) -> None:
        if self.errors:
            raise self.errors[0]

    async def check(self) -> None:
        self.raise_failure()
