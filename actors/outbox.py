"""Coalescing of messages between two actors: one Ray call per event-loop turn, not per message.

A Ray call costs far more than the work of one logical message, so everything one actor sends
to the same method of another actor during one turn of its event loop travels as a single list.
The receiving method handles the list item by item in order, so each logical message sees what
it would have seen alone; only the Ray overhead is shared. Each batch goes with the sender's
generation (the seed run it belongs to), so the receiver can drop what a past seed sent.

Compiled with the hosts' hot path (setup.py), so it imports no Ray: the actor module hands it
the remote method and the exception a dead receiver's reply raises.
"""

from __future__ import annotations

import asyncio
import functools
import pickle
from collections.abc import Callable, Sequence
from typing import Any, Final

PROTOCOL: Final = pickle.HIGHEST_PROTOCOL
"""Batches and replies travel as bytes of this pickle protocol."""

IfDied = tuple[type[BaseException], Callable[[Any], Any]]
"""(exception, answer): a `call` whose reply raises `exception` (Ray's `RayActorError`: the
receiving actor died, or is being restarted) gives each of its items `answer(item)`."""


class Outbox:
    """Messages to one remote method that takes a batch (and, for `call`, returns one)."""

    def __init__(
        self,
        method: Any,
        gen: int,
        errors: list[BaseException],
        if_died: IfDied | None = None,
        on_reply: Callable[[list[Any], Sequence[Any]], None] | None = None,
    ) -> None:
        self._method = method
        """A Ray actor method: `method.remote(gen, batch)` returns the reply's object ref."""
        self._gen = gen
        """Sent with every batch: `method(gen, items)`."""
        self._closed = False
        self.if_died = if_died
        """For `call`: what a receiver that died before answering gives each item, instead of
        stopping the run; None: stop it."""
        self.on_reply = on_reply
        """For `call`: `on_reply(tags, answers)` once per batch, with each item's tag and its
        element of the batched answer, in the order they were sent."""
        self._items: list[Any] = []
        self._tags: list[Any] = []
        self._pending = False
        self._replies: set[asyncio.Future[Any]] = set()
        self.errors = errors
        """Shared with the owning actor, which raises the first one when the driver polls it:
        a failed message or callback must stop the run, not vanish in a log."""

    def post(self, item: Any) -> None:
        """One-way message; the remote method's answer is ignored."""
        self._items.append(item)
        if not self._pending:
            self._schedule()

    def call(self, item: Any, tag: Any) -> None:
        """Request and reply: `on_reply` gets `tag` back with this item's answer.

        One callback per batch rather than a future (or a callback) per item: no task, no
        extra loop turn and no allocation per item on the hot path. Do not mix with `post` on
        the same Outbox (answers match by position).
        """
        self._items.append(item)
        self._tags.append(tag)
        if not self._pending:
            self._schedule()

    def _schedule(self) -> None:
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
        tags, self._tags = self._tags, []
        self._pending = False
        # Pickled here, with the C pickler: Ray passes bytes through as they are, where it
        # would encode a tuple with cloudpickle's pure-Python one (a list item by item).
        ref = self._method.remote(self._gen, pickle.dumps(items, PROTOCOL))
        reply = asyncio.wrap_future(ref.future())
        self._replies.add(reply)
        reply.add_done_callback(functools.partial(self._settle, items, tags))

    async def settled(self) -> None:
        """Returns once every message posted so far has been handled by the receiver."""
        if self._pending:
            self._flush()
        while self._replies:
            await asyncio.wait(list(self._replies))

    def _settle(self, items: list[Any], tags: list[Any], reply: asyncio.Future[Any]) -> None:
        self._replies.discard(reply)
        on_reply, if_died = self.on_reply, self.if_died
        try:
            try:
                answer = reply.result()  # None from `post`'s method, pickled answers from `call`'s
                answers = pickle.loads(answer) if on_reply is not None else ()
            except Exception as e:
                if on_reply is None or if_died is None or not isinstance(e, if_died[0]):
                    raise
                answers = [if_died[1](item) for item in items]
            if on_reply is not None and not self._closed:  # a past seed's are dropped
                on_reply(tags, answers)
        except Exception as e:
            self.errors.append(e)
