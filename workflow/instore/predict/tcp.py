"""A TCP connection's congestion window, as Linux runs it: how long a response takes to flow.

A response does not leave the server at the link's rate from its first byte. A new connection
sends its initial window (10 segments: ``INITIAL_WINDOW_BYTES``), then waits a round trip for
the acknowledgements, and doubles the window each round trip (slow start) until the window
fills the path (rate x RTT), after which the bytes flow at the rate. A connection left idle
longer than its retransmission timeout shrinks its window again before it sends (Linux's
``tcp_slow_start_after_idle``, on by default: the window halves for every timeout of idleness,
down to the initial window). So on a 25 ms, 100 Mbit/s path (312 kB in flight) a 256 kB
response after a pause takes four round trips more than its bytes alone; on a LAN's 0.1 ms
path, microseconds.

Measured here (the reference run's WAN replay of the uproot analysis: 139 reads at a 25.5 ms
RTT): the median read took 26.0 ms and the 99th percentile 103 ms, which is four round trips:
the largest reads after a pause.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Linux's initial window (RFC 6928): 10 segments of the 1448 bytes a 1500-byte MTU carries
INITIAL_WINDOW_BYTES = 10 * 1448
RTO_MIN_S = 0.2  # Linux's least retransmission timeout (TCP_RTO_MIN)


def retransmission_timeout(rtt_s: float) -> float:
    """Linux's timeout on a steady path: the smoothed RTT plus at least TCP_RTO_MIN."""
    return rtt_s + RTO_MIN_S


@dataclass(slots=True)
class Connection:
    """One client's connection to one server: its window and when it last sent."""

    rtt_s: float
    rate: float  # bytes/s the path carries (the link, or the window or mount where they bind)
    initial: float = INITIAL_WINDOW_BYTES
    restart_after_idle: bool = True
    window: float = 0.0  # bytes; 0: not opened yet (the initial window)
    sent_until: float | None = None  # when its last byte left the server
    path: float = field(init=False)  # bytes in flight that fill the path (rate x RTT)
    rto: float = field(init=False)

    def __post_init__(self) -> None:
        self.path = self.rate * self.rtt_s
        self.rto = retransmission_timeout(self.rtt_s)

    def send(self, size: float, start: float) -> tuple[float, float]:
        """``flow_time``, and what the window adds to the bytes' own time (round trips, not
        the rate's); the steady case (the window fills the path, not idled) inline."""
        if self.window >= self.path and (
            not self.restart_after_idle or start - self.sent_until <= self.rto  # type: ignore[operator]
        ):
            self.sent_until = start + size / self.rate
            return size / self.rate, 0.0
        flowing = self.flow_time(size, start)
        return flowing, flowing - size / self.rate

    def flow_time(self, size: float, start: float) -> float:
        """Seconds from the server's first byte of a ``size``-byte response at ``start`` to its
        last, with the window grown (and after idleness shrunk) as Linux does; the window is
        kept for the next response."""
        window = self.window or self.initial
        if (self.restart_after_idle and self.sent_until is not None
                and start - self.sent_until > self.rto):  # fmt: skip
            window = self._shrunk(window, start - self.sent_until)
        elapsed, left = 0.0, float(size)
        path, rate, rtt = self.path, self.rate, self.rtt_s
        while left > 0:
            if window >= path:  # the window fills the path: the rest flows at the rate
                elapsed += left / rate
                break
            sent = left if left < window else window
            left -= sent
            if left > 0:
                elapsed += rtt  # wait for the acknowledgements, then twice as many
                window *= 2
            else:
                elapsed += sent / rate
        self.window = self.initial if self.initial > window else window
        self.sent_until = start + elapsed
        return elapsed

    def _shrunk(self, window: float, idle: float) -> float:
        """Linux's tcp_cwnd_restart: halved for every timeout of idleness, to the initial
        (conditionals for min and max, as in ``flow_time``: the same values, cheaper)."""
        restart = window if window < self.initial else self.initial
        rto = self.rto
        idle -= rto
        while idle > 0 and window > restart:
            window /= 2
            idle -= rto
        return restart if restart > window else window
