"""Coalescing of messages between two actors: one Ray call per event-loop turn, not per message.

A Ray call costs far more than the work of one logical message, so everything one actor sends
to the same method of another actor during one turn of its event loop travels as a single list.
The receiving method handles the list item by item in order, so each logical message sees what
it would have seen alone; only the Ray overhead is shared. Each batch goes with the sender's
generation (the seed run it belongs to), so the receiver can drop what a past seed sent.
"""

from __future__ import annotations

import asyncio
import functools
import pickle
from collections.abc import Callable
from typing import Any

from ray.actor import ActorMethod
from ray.exceptions import RayActorError

PROTOCOL = pickle.HIGHEST_PROTOCOL
"""Batches and replies travel as bytes of this pickle protocol."""


class Outbox:
    """Messages to one remote method that takes a tuple (and, for `call`, returns one)."""

    __slots__ = (
        "_callbacks",
        "_closed",
        "_gen",
        "_items",
        "_method",
        "_pending",
        "_replies",
        "after",
        "errors",
        "if_died",
    )

    def __init__(
        self,
        method: ActorMethod,
        gen: int,
        errors: list[BaseException],
        if_died: Callable[[Any], Any] | None = None,
        after: Callable[[], None] | None = None,
    ) -> None:
        self._method = method
        self._gen = gen
        """Sent with every batch: `method(gen, items)`."""
        self._closed = False
        self.if_died = if_died
        """For `call`: the answer an item gets (`if_died(item)`) when the receiving actor died
        (or is being restarted) before answering, instead of stopping the run; None: stop it."""
        self.after = after
        """For `call`: called once after the callbacks of a whole batch's answers."""
        self._items: list[Any] = []
        self._callbacks: list[Callable[[Any], None]] = []
        self._pending = False
        self._replies: set[asyncio.Future] = set()
        self.errors = errors
        """Shared with the owning actor, which raises the first one when the driver polls it:
        a failed message or callback must stop the run, not vanish in a log."""

    def post(self, item: Any) -> None:
        """One-way message; the remote method's answer is ignored."""
        self._items.append(item)
        self._schedule()

    def call(self, item: Any, on_answer: Callable[[Any], None]) -> None:
        """Request and reply: `on_answer` gets this item's element of the batched answer.

        A callback rather than a future to await: no task and no extra loop turn per item on
        the hot path. Do not mix with `post` on the same Outbox (answers match by position).
        """
        self._items.append(item)
        self._callbacks.append(on_answer)
        self._schedule()

    def _schedule(self) -> None:
        if not self._pending:
            self._pending = True
            asyncio.get_running_loop().call_soon(self._flush)

    def close(self) -> None:
        """The seed this outbox served is over: nothing more is sent, no answer handled."""
        self._closed = True

    def _flush(self) -> None:
        if not self._items or self._closed:  # flushed early by `settled`, or closed
            self._pending = False
            return
        items, self._items = self._items, []
        callbacks, self._callbacks = self._callbacks, []
        self._pending = False
        # Pickled here, with the C pickler: Ray passes bytes through as they are, where it
        # would encode a tuple with cloudpickle's pure-Python one (a list item by item).
        reply = self._method.remote(self._gen, pickle.dumps(items, PROTOCOL)).as_future()
        self._replies.add(reply)
        reply.add_done_callback(functools.partial(self._settle, items, callbacks))

    async def settled(self) -> None:
        """Returns once every message posted so far has been handled by the receiver."""
        if self._pending:
            self._flush()
        while self._replies:
            await asyncio.wait(list(self._replies))

    def _settle(
        self, items: list[Any], callbacks: list[Callable[[Any], None]], reply: asyncio.Future
    ) -> None:
        self._replies.discard(reply)
        try:
            try:
                answer = reply.result()  # None from `post`'s method, pickled answers from `call`'s
                answers = pickle.loads(answer) if callbacks else ()
            except RayActorError:
                if self.if_died is None or not callbacks:
                    raise
                answers = [self.if_died(item) for item in items]
            if callbacks and not self._closed:  # a past seed's answers are dropped
                for on_answer, answer in zip(callbacks, answers, strict=True):
                    on_answer(answer)
                if self.after is not None:
                    self.after()
        except Exception as e:
            self.errors.append(e)


class Checked:
    """Base of every actor: failures of one-way messages and of their callbacks collect in
    `errors`, and `check` (called by the driver on every poll) raises the first, so the run
    stops."""

    def __init__(self) -> None:
        self.errors: list[BaseException] = []

    def raise_failure(self) -> None:
        if self.errors:
            raise self.errors[0]

    async def check(self) -> None:
        self.raise_failure()
