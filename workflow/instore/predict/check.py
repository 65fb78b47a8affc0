"""One measured point against its prediction: the figures, the error, and what the point's
records say about it, in one sentence (``Check.why``); a table row's columns and back."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

from instore.predict.scenario import PART_WORDS

# The host's CPU (every process on it: an emulated site's servers beside its clients) this
# busy during a point is a wait for a core, which the model does not count: at lan-ssd's 64
# HTTP clients it was 77-86% on the runs kept, where the model came out 15-63% fast.
BUSY_HOST = 0.75


@dataclass(frozen=True)
class Check:
    """One measured point against its prediction."""

    site: str
    section: str
    trace: str
    protocol: str
    xcache: str | None
    clients: int
    repetitions: int
    measured_wall_s: float
    predicted_wall_s: float
    measured_cpu_efficiency: float | None
    predicted_cpu_efficiency: float
    waits_on: str
    # what the point's records say beside its median (None: not recorded): the lowest and
    # highest of its walls per pass and how many, its think-time sleeps' overshoot and its
    # reads' latencies summed (per pass, medians), and the model's time away from think
    measured_lo_s: float | None = None
    measured_hi_s: float | None = None
    walls: int = 0
    overshoot_s: float | None = None
    measured_read_s: float | None = None
    predicted_io_s: float | None = None
    # a fixed-time point's: the time, its clients' mean passes (median over repetitions) and
    # the model's own pass, before the fixed time cut it into whole passes and a part
    fixed_time_s: float | None = None
    passes: float | None = None
    predicted_pass_s: float | None = None
    # the share of the host's CPU busy during the point (every process on it; median)
    host_cpu_busy: float | None = None

    @property
    def error(self) -> float:
        return (self.predicted_wall_s - self.measured_wall_s) / self.measured_wall_s

    def why(self) -> str:
        """What the point's records say about its error, in one sentence."""
        err, meas = self.error, self.measured_wall_s
        words = [f"predicted {abs(err):.0%} {'slower' if err > 0 else 'faster'} than measured "
                 f"({self.predicted_wall_s:.3g} s against {meas:.3g} s)"]  # fmt: skip
        lo, hi = self.measured_lo_s, self.measured_hi_s
        if self.walls > 1 and lo is not None and hi is not None and hi > lo:
            spread = (hi - lo) / meas
            words.append(f"its {self.walls} measured walls span {lo:.3g}-{hi:.3g} s "
                         f"({spread:.0%} of their median"
                         + ("; as wide as the error" if spread >= abs(err) else "") + ")")  # fmt: skip
        if self.overshoot_s is not None and self.overshoot_s >= 0.05 * meas:
            words.append(f"its think-time sleeps overshot by {self.overshoot_s:.3g} s "
                         f"({self.overshoot_s / meas:.0%} of its wall): its {self.clients} "
                         "client(s) waited for a CPU, which the model does not count")  # fmt: skip
        busy = self.host_cpu_busy
        if busy is not None and busy >= BUSY_HOST and err < 0:
            words.append(f"the host's CPU was {busy:.0%} busy during it (its {self.clients} "
                         "client(s) and, on an emulated site, its servers share the cores): "
                         "a wait for a core, which the model does not count")  # fmt: skip
        read, io = self.measured_read_s, self.predicted_io_s
        if self.whole_passes():
            words.append(self._step())
        elif read is not None and io is not None:
            words.append(self._parts(read, io))
        if self.waits_on in PART_WORDS:
            words.append(f"the model has it waiting most on {PART_WORDS[self.waits_on]}")
        return "; ".join(words) + "."

    def whole_passes(self) -> bool:
        """A fixed-time point whose clients made whole passes only: its wall per pass is a
        bound (the fixed time over them), not a measurement of one pass."""
        n = self.passes
        return bool(self.fixed_time_s and n and n >= 1 and abs(n - round(n)) < 1e-9
                    and self.predicted_pass_s)  # fmt: skip

    def _step(self) -> str:
        """Where the fixed time's count of passes, not the pass, makes the error: the measured
        pass took at most the fixed time over the whole passes, and the model's pass is set
        beside it, with how the model's count fell a step short or over."""
        n, fixed, own = (
            round(self.passes or 0),
            float(self.fixed_time_s or 0),
            self.predicted_pass_s,
        )
        bound = fixed / n
        return (f"its {n} passes in the fixed {fixed:g} s were whole (the next one had read none of"
                f" its bytes): a pass took at most {bound:.3g} s, and the model's takes {own:.3g} s"
                f" ({(own or 0) / bound - 1:+.0%} of that bound), so the model counts "
                f"{fixed / self.predicted_wall_s:.3g} passes where the records count {n}")  # fmt: skip

    def _parts(self, read: float, io: float) -> str:
        """The difference split between the reads (the replay's latencies summed, over its
        streams where it has several, against the model's I/O) and the time between them
        (think time as replayed against as recorded)."""
        d_read = io - read
        d_other = (self.predicted_wall_s - io) - (self.measured_wall_s - read)
        where = (f"mostly the reads: the storage served them {'faster' if d_read > 0 else 'slower'}"
                 " than the profile says" if abs(d_read) >= abs(d_other) else
                 "mostly between the reads: the replay's think time ran "
                 f"{'shorter' if d_other > 0 else 'longer'} than recorded, outside the storage")  # fmt: skip
        return (f"of the {self.predicted_wall_s - self.measured_wall_s:+.3g} s, the reads "
                f"({read:.3g} s measured, latencies summed; {io:.3g} s of I/O in the model) "
                f"account for {d_read:+.3g} s and the time between them for {d_other:+.3g} s: "
                f"{where}")  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "error": self.error, "why": self.why()}


COLUMNS = [f.name for f in fields(Check)]


def from_row(row: dict[str, Any]) -> Check:
    """A check from its table row (``Check.as_dict``'s keys; the computed ones ignored, an
    empty cell None)."""

    def value(v: Any) -> Any:
        return None if v is None or (isinstance(v, float) and math.isnan(v)) or v == "" else v

    kept = {k: value(row.get(k)) for k in COLUMNS}
    kept["clients"] = int(kept["clients"])
    kept["repetitions"] = int(kept["repetitions"])
    kept["walls"] = int(kept["walls"] or 0)
    kept["waits_on"] = kept["waits_on"] or ""
    return Check(**kept)
