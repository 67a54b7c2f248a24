"""Rounds of messages between tasks that run at the same time on several workers.

Returns
    :class:`Exchange` (made inside a running task): :meth:`Exchange.all_to_all` sends
    each peer task its message of a round and returns the messages every peer sent this
    one. :func:`abort_channel` (from the client) ends every exchange of a channel with
    :class:`ExchangeAborted`.
Approach
    A program whose tasks must trade data many times while they run (a search's owners,
    once or twice a level) pays the scheduler a round trip per trade when each is a task.
    Here the tasks stay running and trade directly, worker to worker, on the workers'
    pooled connections (OmpSs's cluster mode moves data between nodes the same way,
    without its master): the runtime's worker plugin gives each worker a handler,
    :data:`MAILBOX_OP`, that files a message under its channel and round in this worker's
    :class:`Mailbox`, where the receiving task's thread waits for it. A message to the
    sending task itself never leaves the process. The tasks of one channel must all be
    running (each on its own worker); one that ends or fails leaves the others waiting
    until :func:`abort_channel` or the exchange's ``timeout``.
Encoding
    A message is any value Dask can serialize (numpy arrays travel as frames, not
    pickled); rounds are any hashable values the tasks agree on.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import OrderedDict, defaultdict

from taskbfs.errors import TaskBFSError

#: The worker handler that files a message (added by the runtime's worker plugin).
MAILBOX_OP = "taskbfs_mailbox"
#: Channels a worker remembers as ended (a late message to one is dropped).
ENDED_CHANNELS = 1024
#: How often a waiting task looks whether its channel was aborted (seconds).
WAIT_SLICE = 0.25
#: Default seconds an exchange waits for a round's messages: a safety net for a lost
#: client (the client aborts the exchange when its program fails).
EXCHANGE_TIMEOUT = 300.0


class ExchangeAborted(TaskBFSError):
    """The exchange's channel was aborted (its program failed elsewhere), or a peer's
    message did not come within the exchange's ``timeout``: then ``workers`` names the
    peers whose messages did not come (a frozen or overloaded worker)."""

    workers: tuple = ()
    #: The exchange's timeout (seconds) when a peer's message did not come.
    timeout: float | None = None


class Mailbox:
    """One worker's messages by channel and round, and the channels ended or aborted."""

    def __init__(self):
        self._ready = threading.Condition()
        self._boxes: dict = defaultdict(lambda: defaultdict(dict))  # channel -> round -> {sender: msg}
        self._ended: OrderedDict = OrderedDict()  # channel -> "ended" or "aborted"

    def put(self, channel: str, round_, sender: int, message) -> None:
        """File ``message`` (a late one for an ended channel is dropped)."""
        with self._ready:
            if channel in self._ended:
                return
            self._boxes[channel][round_][sender] = message
            self._ready.notify_all()

    def take(self, channel: str, round_, senders: int, deadline: float) -> dict:
        """``{sender: message}`` of ``round_`` once ``senders`` have sent one (waiting
        until ``deadline``, a ``time.monotonic()`` value)."""
        with self._ready:
            while True:
                if self._ended.get(channel) == "aborted":
                    raise ExchangeAborted(f"the exchange {channel!r} was aborted")
                box = self._boxes[channel]
                if len(box[round_]) >= senders:
                    return box.pop(round_)
                left = deadline - time.monotonic()
                if left <= 0:
                    late = ExchangeAborted(
                        f"the exchange {channel!r}: {senders - len(box[round_])} of {senders} "
                        f"messages of round {round_!r} did not come within "
                        f"the exchange's timeout")
                    late.missing = sorted(set(range(senders)) - set(box[round_]))
                    raise late
                self._ready.wait(min(left, WAIT_SLICE))

    def end(self, channel: str, how: str = "ended") -> None:
        """Drop ``channel``'s messages; later ones are dropped too (``how``: "aborted"
        also wakes its waiting tasks with :class:`ExchangeAborted`)."""
        with self._ready:
            self._boxes.pop(channel, None)
            self._ended[channel] = how
            while len(self._ended) > ENDED_CHANNELS:
                self._ended.popitem(last=False)
            self._ready.notify_all()


_mailboxes: dict[str, Mailbox] = {}
_mailboxes_lock = threading.Lock()


def mailbox(address: str) -> Mailbox:
    """The mailbox of the worker at ``address`` (one per worker, made on first use)."""
    with _mailboxes_lock:
        return _mailboxes.setdefault(address, Mailbox())


def forget_mailbox(address: str) -> None:
    """Drop a worker's mailbox (the runtime leaving it)."""
    with _mailboxes_lock:
        _mailboxes.pop(address, None)


async def deliver(channel: str, round_, sender: int, message=None, abort: bool = False,
                  dask_worker=None) -> str:
    """The worker handler :data:`MAILBOX_OP`: file ``message`` from peer ``sender``
    (``abort``: abort ``channel`` instead)."""
    box = mailbox(dask_worker.address)
    if abort:
        box.end(channel, "aborted")
    else:
        box.put(channel, _hashable(round_), sender, message)
    return "OK"


def _hashable(round_):
    """A round as msgpack gives it back (a tuple arrives as a list)."""
    return tuple(_hashable(r) for r in round_) if isinstance(round_, list) else round_


class Exchange:
    """The messages of one channel between ``peers`` (worker addresses, one task on
    each; this task is peer ``me``), made in the running task.

    Parameters
    ----------
    channel : str
        Names the exchange (unique per program run, e.g. the program's id).
    peers : list of str
    me : int
    timeout : float, optional
        Seconds to wait for a round's messages before :class:`ExchangeAborted` (default
        :data:`EXCHANGE_TIMEOUT`).
    """

    def __init__(self, channel: str, peers: list[str], me: int, timeout: float | None = None):
        from distributed import get_worker

        self.channel, self.peers, self.me = channel, list(peers), int(me)
        self.worker = get_worker()
        if self.worker.address != self.peers[self.me]:
            raise TaskBFSError(f"exchange {channel!r}: peer {me} is {self.peers[self.me]}, "
                               f"but this task runs on {self.worker.address}")
        self.box = mailbox(self.worker.address)
        self.timeout = float(EXCHANGE_TIMEOUT if timeout is None else timeout)
        #: Seconds this task has waited for its peers' messages, all rounds so far.
        self.waited = 0.0

    def all_to_all(self, round_, messages: list) -> list:
        """Send ``messages[p]`` to peer p (``messages[me]`` stays here) as round
        ``round_``; the messages every peer sent this one in that round, by peer."""
        from distributed.protocol import to_serialize

        round_ = _hashable(round_)
        loop = self.worker.loop.asyncio_loop
        sends = []
        for peer, address in enumerate(self.peers):
            if peer == self.me:
                self.box.put(self.channel, round_, peer, messages[peer])
                continue
            # one way: the peer's answer would cost both event loops a message per send
            call = self.worker.rpc(address).__getattr__(MAILBOX_OP)(
                channel=self.channel, round_=round_, sender=self.me,
                message=to_serialize(messages[peer]), reply=False)
            sends.append((address, asyncio.run_coroutine_threadsafe(call, loop)))
        start = time.monotonic()
        try:
            got = self.box.take(self.channel, round_, len(self.peers), start + self.timeout)
        except ExchangeAborted as exc:  # name the peers that did not send
            exc.workers = tuple(self.peers[p] for p in getattr(exc, "missing", ()))
            exc.timeout = self.timeout
            if exc.workers:
                exc.args = (f"{exc.args[0]} ({self.timeout:g} s) from {', '.join(exc.workers)}",)
            raise
        self.waited += time.monotonic() - start
        for address, sent in sends:  # written by now (each peer read it before it sent back)
            try:
                sent.result(timeout=self.timeout)
            except Exception as exc:
                failed = ExchangeAborted(f"the exchange {self.channel!r}: a message of round "
                                         f"{round_!r} was not delivered to {address}: "
                                         f"{type(exc).__name__} {exc}")
                failed.workers = (address,)
                if isinstance(exc, TimeoutError):  # the peer did not take it in time
                    failed.timeout = self.timeout
                raise failed from exc
        return [got[p] for p in range(len(self.peers))]

    def close(self) -> None:
        """End this task's part of the channel (late messages to it are dropped)."""
        self.box.end(self.channel)


async def _abort(rpc, address: str, channel: str) -> None:
    try:
        await rpc(address).__getattr__(MAILBOX_OP)(channel=channel, round_=0, sender=-1,
                                                  abort=True)
    except Exception:  # a worker that left has no task waiting
        pass


def abort_channel(client, addresses, channel: str) -> None:
    """Abort ``channel`` on the workers at ``addresses``: their tasks waiting on it raise
    :class:`ExchangeAborted`. It returns at once (the messages go on the client's event
    loop; a worker that left or hangs is skipped: its task, if any, times out)."""

    async def abort_all():
        await asyncio.gather(*(_abort(client.rpc, a, channel) for a in addresses))

    with contextlib.suppress(Exception):  # a closing client: its workers' tasks time out
        client.loop.add_callback(abort_all)


__all__ = ["Exchange", "ExchangeAborted", "MAILBOX_OP", "Mailbox", "abort_channel", "deliver",
           "mailbox"]
