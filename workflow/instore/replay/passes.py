"""The replay's passes: one pass is the trace once, its lead-in, its streams (``streams.Plan``)
and its tail; each stream closed-loop with its own think times, the streams side by side.

A trace of one stream runs in the calling thread, exactly as the serial replay always ran.
Several run in threads of this one process: every source waits for storage without holding
the GIL (``os.pread``, urllib3's sockets, and the XRootD binding, which releases it around
its synchronous reads: checked here, a thread kept running within 6 ms during 8 MB reads),
and a process per stream would pay an interpreter and a client each.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

from instore.replay.streams import Plan
from instore.replay.targets import Targets
from instore.replay.trace import READ_OPS, Request, ThinkTimes, Trace
from instore.storage import Reader, open_reader


class _Clock:
    """One stream's think time: an oversleep is taken off its next pause, so the total think
    time stays right whatever the timer's slack."""

    def __init__(self, sleep: Callable[[float], Any] = time.sleep) -> None:
        self.sleep = sleep
        self.debt = 0.0
        self.overshoot = 0.0
        self.think_s = 0.0

    def pause(self, seconds: float) -> None:
        self.think_s += seconds
        want = seconds - self.debt
        if want <= 0:
            self.debt = -want
            return
        t0 = time.perf_counter()
        self.sleep(want)
        self.debt = time.perf_counter() - t0 - want
        self.overshoot += self.debt
        self.debt = max(0.0, self.debt)

    def think_until(self, seconds: float, deadline: float | None) -> bool:
        """Pause ``seconds``, but not past ``deadline`` (perf_counter; None: no deadline);
        False when the deadline came first."""
        if deadline is None:
            self.pause(seconds)
            return True
        left = deadline - time.perf_counter()
        self.pause(max(0.0, min(seconds, left)))
        return seconds < left


class _Board:
    """The pass in hand, shared by its streams: which awaited requests have completed, and
    whether the pass has stopped (a stream failed, the deadline came, Ctrl-C)."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.done: set[int] = set()
        self.stopped = threading.Event()

    def finish(self, index: int) -> None:
        with self.cond:
            self.done.add(index)
            self.cond.notify_all()

    def stop(self) -> None:
        self.stopped.set()
        with self.cond:
            self.cond.notify_all()

    def wait(self, indices: tuple[int, ...], deadline: float | None) -> bool:
        """Until every one of ``indices`` has completed; False if the pass stopped first."""
        with self.cond:
            while not self.stopped.is_set() and not self.done.issuperset(indices):
                left = None if deadline is None else deadline - time.perf_counter()
                if left is not None and left <= 0:
                    return False
                self.cond.wait(left)
            return not self.stopped.is_set()


class Replay:
    """The state of one replay: open sources, the clocks and the tallies of all streams."""

    def __init__(self, trace: Trace, targets: Targets, timeout: float, plan: Plan) -> None:
        self.trace, self.targets, self.timeout, self.plan = trace, targets, timeout, plan
        self.readers: dict[int, Reader] = {}
        self.clock = _Clock()  # the lead-in, the tail, and a lone stream's requests
        self.clocks: list[_Clock] = []  # each stream's, when several run side by side
        self.lock = threading.Lock()
        self.open_s = 0.0
        self.latencies: list[float] = []
        self.sizes: list[int] = []
        self.spans: list[tuple[float, float]] = []  # (issued, answered) of every request sent
        self.bytes_read = 0
        self.vector_reads = 0
        self.stats = 0
        self.done = 0
        self.pass_bytes = sum(r.nbytes for r in trace.requests if r.op in READ_OPS)
        self.read_in_pass = 0  # recorded data bytes of the pass in hand's completed reads
        self.at = 0  # the request in hand (the one that failed, if one did)
        self.passes = 0  # complete passes
        self.pass_walls: list[float] = []  # each complete pass's wall, lead-in to tail
        self.partial = 0.0  # the share of a pass's data bytes the pass in hand has read
        self.think_before_pass = 0.0  # think time replayed before the pass in hand began
        self.failure: BaseException | None = None
        self.failed_at = 0  # the request whose failure ``failure`` is

    @property
    def think_s(self) -> float:
        return sum(c.think_s for c in (self.clock, *self.clocks))

    @property
    def overshoot(self) -> float:
        return sum(c.overshoot for c in (self.clock, *self.clocks))

    def one_pass(self, think: ThinkTimes, deadline: float | None) -> bool:
        """The trace once: lead-in, the streams, tail; False when the deadline cut it short
        (no request is issued after it)."""
        self.partial, self.read_in_pass = 0.0, 0
        self.think_before_pass = self.think_s
        began = time.perf_counter()
        if not self.clock.think_until(think.lead_s, deadline):
            return False
        board = _Board()
        if len(self.plan.streams) == 1:
            done = self.stream(0, self.clock, board, deadline)
        else:
            done = self.side_by_side(board, deadline)
        if not done or not self.clock.think_until(think.tail_s, deadline):
            return False
        self.close_all()  # what the job left open closed at its end; the next pass opens anew
        self.passes, self.partial = self.passes + 1, 0.0
        self.pass_walls.append(time.perf_counter() - began)
        self.think_before_pass = self.think_s
        return True

    def think_in_pass(self) -> float:
        """The recorded think time replayed in the pass in hand (0 once a pass completed)."""
        return self.think_s - self.think_before_pass

    def stream(self, k: int, clock: _Clock, board: _Board, deadline: float | None) -> bool:
        """Stream ``k``'s requests, each after what it waits for and its think time; False
        when the pass stopped or the deadline came first. A detached request is sent from a
        thread of its own and the stream goes on; the stream ends once those are answered."""
        sent: list[threading.Thread] = []
        try:
            return self._stream(k, clock, board, deadline, sent)
        finally:
            for t in sent:
                while t.is_alive():
                    t.join(0.1)  # in slices: Ctrl-C reaches this thread
            if self.failure is not None and len(self.plan.streams) == 1:
                self.at = self.failed_at  # a lone stream's detached request failed: as its
                raise self.failure  # own would, named by its index

    def _stream(self, k: int, clock: _Clock, board: _Board, deadline: float | None,
                sent: list[threading.Thread]) -> bool:  # fmt: skip
        plan, requests, waited_on = self.plan, self.trace.requests, self.plan.waited_on
        for i in plan.streams[k]:
            if plan.waits[i] and not board.wait(plan.waits[i], deadline):
                return False
            if len(plan.streams) == 1:
                self.at = i
            if not clock.think_until(plan.before[i], deadline) or board.stopped.is_set():
                return False
            if i in plan.detached:
                sent.append(self._send(i, requests[i], board))
                continue
            self.issue(i, requests[i])
            if i in waited_on:
                board.finish(i)
        return True

    def _send(self, i: int, r: Request, board: _Board) -> threading.Thread:
        """Request ``i`` issued from a thread of its own, announced once answered; a failure
        stops the pass and is kept for the stream to raise."""

        def run() -> None:
            try:
                self.issue(i, r)
            except BaseException as err:  # raised by the stream, or by side_by_side
                with self.lock:
                    if self.failure is None:
                        self.failure, self.failed_at = err, i
                board.stop()
                return
            board.finish(i)

        t = threading.Thread(target=run, name=f"replay-request-{i}", daemon=True)
        t.start()
        return t

    def side_by_side(self, board: _Board, deadline: float | None) -> bool:
        """Every stream in a thread of its own; the first failure stops them all and is
        raised here, as a lone stream's would be."""
        while len(self.clocks) < len(self.plan.streams):
            self.clocks.append(_Clock())
        ended: list[bool] = [False] * len(self.plan.streams)

        def run(k: int) -> None:
            self.clocks[k].sleep = board.stopped.wait  # a stop ends its think time at once
            try:
                ended[k] = self.stream(k, self.clocks[k], board, deadline)
            except BaseException as err:  # any source's failure stops the pass; raised below
                with self.lock:
                    self.failure = self.failure or err
            finally:
                if not ended[k]:
                    board.stop()

        threads = [threading.Thread(target=run, args=(k,), name=f"replay-stream-{k}", daemon=True)
                   for k in range(len(self.plan.streams))]  # fmt: skip
        for t in threads:
            t.start()
        try:
            for t in threads:
                while t.is_alive():
                    t.join(0.1)  # in slices: Ctrl-C reaches this thread
        except KeyboardInterrupt:
            board.stop()
            raise
        if self.failure is not None:
            raise self.failure
        return all(ended)

    def url(self, file: int) -> str:
        """Where the trace's ``file`` is for the pass in hand."""
        return self.targets.for_pass(self.passes)[file]

    def issue(self, index: int, r: Request) -> None:
        t0 = time.perf_counter()
        try:
            if r.op == "Open":
                self.readers[r.handle] = open_reader(self.url(r.file), self.timeout)
            elif r.op == "Close":
                self.readers.pop(r.handle).close()
            elif r.op in READ_OPS:
                reader = self.readers[r.handle]
                ranges = [(a, min(a + n, reader.size)) for a, n in r.chunks if a < reader.size]
                data = reader.read_ranges(ranges) if ranges else []
        except BaseException:
            with self.lock:
                self.at = index
            raise
        t1 = time.perf_counter()
        with self.lock:
            if r.op == "Open":
                self.open_s += t1 - t0
            elif r.op == "Stat":
                self.stats += 1  # answered from the open's stat: nothing sent
            elif r.op in READ_OPS:
                self.latencies.append(t1 - t0)
                self.sizes.extend(len(d) for d in data)
                self.bytes_read += sum(len(d) for d in data)
                self.vector_reads += r.op == "VectorRead"
                self.read_in_pass += r.nbytes
                self.partial = self.read_in_pass / self.pass_bytes if self.pass_bytes else 0.0
            if r.op != "Stat":
                self.spans.append((t0, t1))
            self.done += 1

    def overlapping_replayed(self) -> int:
        """Requests the replay sent while another of its own was in flight."""
        latest, count = float("-inf"), 0
        for start, end in sorted(self.spans):
            count += start < latest
            latest = max(latest, end)
        return count

    def close_all(self) -> None:
        for reader in self.readers.values():
            # closing after a failure: the failure is what is recorded
            with contextlib.suppress(Exception):
                reader.close()
        self.readers.clear()
