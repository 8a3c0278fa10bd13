"""Group commit: one writer thread per SQL store runs concurrent writes in one transaction.

A command's append costs a few statements, but a transaction commit costs a WAL write on
SQLite and a WAL flush (fsync) plus round trips on PostgreSQL. With many games in flight,
:class:`GroupWriter` takes every write queued while the previous transaction ran and runs
them in ONE transaction on its own DBAPI connection (pre-built SQL, no ORM on the hot path).

Each write stays all-or-nothing with its own outcome:

- a write does every check (game exists, seq continues, hash chains, command seen) before
  its first statement that changes anything, and those checks are authoritative because the
  transaction holds the write lock (SQLite ``BEGIN IMMEDIATE``) or the game row
  (PostgreSQL ``SELECT … FOR UPDATE``); a refused write raises a
  :class:`~services.platform.store.StoreError` having changed nothing, so the batch goes on;
- anything else going wrong (a constraint another process's commit tripped, a lost
  connection) rolls the batch back and runs each of its writes again alone, in its own
  transaction, so that one failure never fails another write.

A batch may start with one read for all its writes (``prepare``: on PostgreSQL, the heads of
every game the batch appends to, locked in one ``SELECT … FOR UPDATE``), each write finding
its part in :attr:`Write.batched`; a write whose part is missing reads for itself, as it does
when it runs alone. It may end with one statement for all its writes (``finish``: on
PostgreSQL, every append's rows): a write allowed to (:attr:`Write.may_defer`, the only write
of its game in the batch) leaves its statement's values in :attr:`Write.deferred` once its
checks passed, and ``finish`` writes them all at once; if that fails, the batch runs again
write by write, as after any other failure.

On PostgreSQL a batch usually needs no read at all (the ``blind`` step): each append
carries the head its caller decided after, and one statement in autocommit (one round trip,
its own transaction) writes every append of the batch, failing by itself, having written
nothing, when a head is elsewhere or a command id was used; the batch then runs as above.

A write's future completes only after its transaction committed, so a caller never replies
to a client before its events are durable. Writes submitted from an event loop
(:meth:`GroupWriter.submit_async`) reach the thread together once per loop iteration, and
are settled with ONE ``call_soon_threadsafe`` per batch and loop, instead of one wake-up of
the thread and of the loop per write.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from typing import Any, Generic, TypeVar

from services.platform.store import StoreError

T = TypeVar("T")

Cursor = Any
"""A DBAPI cursor (sqlite3 or psycopg)."""

MAX_BATCH = 256
"""About the most writes one transaction carries (bounds the latency one batch adds to the
next; the writes one loop iteration handed over together stay in one batch)."""

NOT_READ: Any = object()
""":attr:`Write.batched` before (or without) a batch-wide read."""


class LostRace(Exception):
    """A write's statement found the database changed under its checks (another process).

    Not a StoreError: it aborts the batch, and the write is run again alone, where its
    ``recover`` step turns it into the StoreError the caller gets.
    """


class Write(Generic[T]):
    """One write: ``run(cursor)`` does it inside a transaction; ``recover(error)`` (in a fresh
    transaction, after a constraint violation or :class:`LostRace` when run alone) returns
    the result or raises the StoreError that the violation means."""

    __slots__ = ("batch_key", "batched", "blind", "blind_result", "deferred", "future",
                 "lock_key", "loop", "may_defer", "recover", "run", "sole")

    def __init__(
        self,
        run: Callable[[Cursor], T],
        recover: Callable[[Cursor, Exception], T] | None = None,
        *,
        lock_key: str = "",
        batch_key: object = None,
    ) -> None:
        self.run = run
        self.recover = recover
        self.lock_key = lock_key
        """What the write locks (its game id): a batch runs its writes in this order, so that
        two transactions locking several games take them in one order and never deadlock."""
        self.batch_key = batch_key
        """What a batch-wide read (the writer's ``prepare``) should fetch for this write
        (None: nothing)."""
        self.batched: Any = NOT_READ
        """What that read found for this write, set in the write's transaction; NOT_READ
        when the write must read for itself."""
        self.sole = True
        """Whether it is the only write of its game (``lock_key``) in its batch (set by the
        writer before each run): only such a write may use the batch's ``prepare`` read or
        leave its changes to ``finish``, since a game written twice must see its first write
        before the second one's checks."""
        self.may_defer = False
        """Whether the write may leave its changes to the batch's ``finish`` (set by the
        writer before each run)."""
        self.deferred: Any = None
        """The changes the write left to ``finish`` (None: it made them itself)."""
        self.blind: Callable[[], Any] | None = None
        """What the write gives the writer's ``blind`` step, computed without the database
        (None from the call: it must read first); see :class:`GroupWriter`."""
        self.blind_result: Any = None
        """The write's result when the ``blind`` step wrote it."""
        self.future: Future[T] | asyncio.Future[T]
        """Set by :meth:`GroupWriter.submit` or :meth:`GroupWriter.submit_async`."""
        self.loop: asyncio.AbstractEventLoop | None = None
        """The loop owning ``future`` when it is an asyncio future."""

    def release(self) -> None:
        """Drop the steps and what the batch left here, once the write is settled.

        The steps are usually closures that refer back to the write (to read
        :attr:`batched`, to set :attr:`deferred`). Kept, that cycle would leave the write,
        its entries, its result and its future to the cyclic garbage collector instead of
        freeing them at once: about 25 objects a command, and under load a young collection
        every few hundred commands that stalls the request loop for 4-10 ms.
        """
        self.run = _already_settled
        self.recover = None
        self.blind = self.blind_result = None
        self.batched = NOT_READ
        self.deferred = None


def _already_settled(cursor: Cursor) -> Any:
    raise RuntimeError("this write was settled already")


def let_go(connection: Any, *, invalidate: bool) -> None:
    """Hand a kept DBAPI connection (a pool proxy) back: closed, or, after a failure,
    invalidated so that the pool never lends it again. Its own errors are ignored: it may
    be dead already."""
    if connection is None:
        return
    with contextlib.suppress(Exception):
        if invalidate:
            connection.invalidate()
        else:
            connection.close()


def _settle(outcomes: list[tuple[asyncio.Future[Any], bool, Any]]) -> None:
    """Complete a batch's asyncio futures (runs on their loop)."""
    for future, ok, value in outcomes:
        if future.cancelled():
            continue  # the caller gave up waiting; the write stands (or failed) regardless
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)


class GroupWriter:
    """A thread running queued writes in shared transactions (see the module docstring).

    ``connect()`` returns a DBAPI connection (a SQLAlchemy pool proxy) used only by this
    thread; ``begin`` is the statement opening a transaction (``None``: the driver opens one
    implicitly, as psycopg does); ``lock`` is held around each transaction (the store's lock
    that serializes SQLite access in this process); ``prepare(cursor, writes)``, if given,
    runs first in each batch's transaction, with the writes in the order they will run, and
    sets what it read for each in :attr:`Write.batched`; ``finish(cursor, writes)``, if given,
    runs last, before the commit, and makes the changes the writes left in
    :attr:`Write.deferred` (raising, e.g. :class:`LostRace`, rolls the batch back);
    ``blind(connection, offers)``, if given, is tried first when every write of a batch
    offers what it would write without reading (:attr:`Write.blind`; each game once): it
    must write them all in one atomic step or raise having written nothing, and the batch
    then runs as usual. ``on_batch(size)``, if given, is called with the number of writes of
    each batch (on the writer thread, before the batch runs): what group commit gathered.
    """

    def __init__(
        self,
        connect: Callable[[], Any],
        *,
        begin: str | None,
        lock: contextlib.AbstractContextManager[Any],
        integrity_error: type[Exception],
        name: str = "store-writer",
        prepare: Callable[[Cursor, list[Write[Any]]], None] | None = None,
        finish: Callable[[Cursor, list[Write[Any]]], None] | None = None,
        blind: Callable[[Any, list[Any]], None] | None = None,
        on_batch: Callable[[int], None] | None = None,
    ) -> None:
        self._connect = connect
        self._on_batch = on_batch
        self._prepare = prepare
        self._finish = finish
        self._blind = blind
        self._begin = begin
        self._lock = lock
        self._integrity_error = integrity_error
        self._queue: queue.SimpleQueue[list[Write[Any]] | None] = queue.SimpleQueue()
        self._submitted: dict[asyncio.AbstractEventLoop, list[Write[Any]]] = {}
        """Writes submitted from each loop during its current iteration, not yet queued."""
        self._connection: Any = None
        self._closed = False
        self.batches = 0
        """How many transactions the writer has committed or tried (for tests and benches)."""
        self.blind_batches = 0
        """How many batches the ``blind`` step wrote (for tests and benches)."""
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def submit(self, write: Write[T]) -> Future[T]:
        """Queue ``write``; its future holds the result once committed (or the error).

        :raises RuntimeError: if the writer is closed.
        """
        future: Future[T] = Future()
        write.future = future
        self._enqueue([write])
        return future

    def submit_async(self, write: Write[T]) -> asyncio.Future[T]:
        """Queue ``write`` from the running event loop; await the returned future.

        The writes a loop submits during one of its iterations reach the writer thread
        together, at the end of that iteration: one hand-over (and at most one wake-up of
        the thread) for all of them, where a hand-over per write costs a system call each.

        :raises RuntimeError: if the writer is closed, or outside an event loop.
        """
        loop = asyncio.get_running_loop()
        if self._closed:
            raise RuntimeError("the store is closed")
        future: asyncio.Future[T] = loop.create_future()
        write.future, write.loop = future, loop
        submitted = self._submitted.get(loop)
        if submitted is None:
            submitted = self._submitted[loop] = []
            loop.call_soon(self._pass_to_writer, loop)
        submitted.append(write)
        return future

    def _pass_to_writer(self, loop: asyncio.AbstractEventLoop) -> None:
        """Queue what ``loop`` submitted during its last iteration (runs on that loop)."""
        writes = self._submitted.pop(loop, [])
        try:
            self._enqueue(writes)
        except RuntimeError as closed:  # closed since they were submitted
            self._settle_batch(writes, [(False, closed)] * len(writes))

    def _enqueue(self, writes: list[Write[Any]]) -> None:
        if self._closed:
            raise RuntimeError("the store is closed")
        if writes:
            self._queue.put(writes)

    def close(self) -> None:
        """Finish the queued writes, stop the thread, and close the connection."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        self._thread.join()

    def _serve(self) -> None:
        try:
            while True:
                first = self._queue.get()
                if first is None:
                    return
                batch = list(first)
                stop = False
                while len(batch) < MAX_BATCH:
                    try:
                        more = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if more is None:
                        stop = True
                        break
                    batch.extend(more)
                self._execute(batch)
                if stop:
                    return
        finally:
            self._drop_connection(invalidate=False)
            # Writes that raced close() behind the sentinel must not wait forever.
            late: list[Write[Any]] = []
            with contextlib.suppress(queue.Empty):
                while True:
                    writes = self._queue.get_nowait()
                    if writes is not None:
                        late.extend(writes)
            closed = RuntimeError("the store is closed")
            self._settle_batch(late, [(False, closed)] * len(late))

    def _cursor(self) -> Cursor:
        if self._connection is None:
            self._connection = self._connect()
        return self._connection.cursor()

    def _drop_connection(self, *, invalidate: bool) -> None:
        connection, self._connection = self._connection, None
        let_go(connection, invalidate=invalidate)

    def _transaction_start(self, cursor: Cursor) -> None:
        if self._begin is not None:
            cursor.execute(self._begin)

    def _commit(self) -> None:
        if self._begin is not None:
            self._connection.cursor().execute("COMMIT")
        else:
            self._connection.commit()

    def _rollback(self) -> None:
        if self._connection is None:
            return
        try:
            if self._begin is not None:
                with contextlib.suppress(Exception):  # "no transaction is active" is fine
                    self._connection.cursor().execute("ROLLBACK")
            else:
                self._connection.rollback()
        except Exception:
            self._drop_connection(invalidate=True)

    def _execute(self, batch: list[Write[Any]]) -> None:
        self.batches += 1
        if self._on_batch is not None:
            self._on_batch(len(batch))
        with self._lock:
            outcomes = self._written_blind(batch)
            if outcomes is None:
                try:
                    outcomes = self._together(batch)
                except Exception:
                    self._rollback()
                    outcomes = [self._alone(write) for write in batch]
        self._settle_batch(batch, outcomes)

    def _written_blind(self, batch: list[Write[Any]]) -> list[tuple[bool, Any]] | None:
        """Write the batch with the ``blind`` step if every write offers to (each game once);
        None when it does not apply or failed, having written nothing: the batch then runs
        as usual, reads first, and each write gets the outcome it would have had."""
        if self._blind is None or len({write.lock_key for write in batch}) != len(batch):
            return None
        offers = [write.blind() if write.blind is not None else None for write in batch]
        if any(offer is None for offer in offers):
            return None
        try:
            if self._connection is None:
                self._connection = self._connect()
            self._blind(self._connection, offers)
        except Exception:
            return None
        self.blind_batches += 1
        return [(True, write.blind_result) for write in batch]

    @staticmethod
    def _settle_batch(batch: list[Write[Any]], outcomes: list[tuple[bool, Any]]) -> None:
        """Complete every write's future: concurrent ones here, asyncio ones on their loop."""
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], bool, Any]]] = {}
        for write, (ok, value) in zip(batch, outcomes, strict=True):
            write.release()
            if write.loop is not None:
                future = write.future
                assert isinstance(future, asyncio.Future)
                by_loop.setdefault(write.loop, []).append((future, ok, value))
            else:
                with contextlib.suppress(InvalidStateError):  # the caller cancelled it
                    if ok:
                        write.future.set_result(value)
                    else:
                        write.future.set_exception(value)
        for loop, settled in by_loop.items():
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                loop.call_soon_threadsafe(_settle, settled)

    def _together(self, batch: list[Write[Any]]) -> list[tuple[bool, Any]]:
        """Run the batch in one transaction; raise (to roll back) on anything but a refusal."""
        cursor = self._cursor()
        self._transaction_start(cursor)
        outcomes: list[tuple[bool, Any]] = [(False, None)] * len(batch)
        # A stable sort: one game's writes keep their order (their seqs follow each other).
        order = sorted(range(len(batch)), key=lambda i: batch[i].lock_key)
        ordered = [batch[index] for index in order]
        together = len(batch) > 1
        finish = self._finish if together else None
        writes_of_game = collections.Counter(write.lock_key for write in batch)
        for write in batch:
            write.batched = NOT_READ
            write.deferred = None
            write.sole = writes_of_game[write.lock_key] == 1
            write.may_defer = finish is not None and write.sole
        if self._prepare is not None and together:
            self._prepare(cursor, ordered)
        for index in order:
            try:
                outcomes[index] = (True, batch[index].run(cursor))
            except StoreError as refused:  # raised before the write changed anything
                outcomes[index] = (False, refused)
        if finish is not None:
            finish(cursor, ordered)
        self._commit()
        return outcomes

    def _alone(self, write: Write[Any]) -> tuple[bool, Any]:
        """Run one write in its own transaction (after a batch failed)."""
        write.batched = NOT_READ  # what the failed batch read is gone with its transaction
        write.sole, write.may_defer, write.deferred = True, False, None
        try:
            return True, self._in_transaction(write.run)
        except StoreError as refused:
            self._rollback()
            return False, refused
        except (LostRace, self._integrity_error) as violation:
            self._rollback()
            if write.recover is None:
                return False, violation
            recover, cause = write.recover, violation

            def recovered(cursor: Cursor) -> Any:
                return recover(cursor, cause)

            try:
                return True, self._in_transaction(recovered)
            except Exception as error:
                self._rollback()
                return False, error
        except Exception as error:  # the connection itself failed: next batch reconnects
            self._rollback()
            self._drop_connection(invalidate=True)
            return False, error

    def _in_transaction(self, run: Callable[[Cursor], T]) -> T:
        cursor = self._cursor()
        self._transaction_start(cursor)
        result = run(cursor)
        self._commit()
        return result
