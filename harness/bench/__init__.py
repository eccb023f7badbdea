"""``harness bench``: a candidate optimizer against tuned baselines under a protocol, with a
verdict per cell and its interval.

The library behind the command (the CLI only parses and prints); users call it as
``harness.api.bench``::

    from harness import api
    done = api.bench("torch.optim:SGD", scale="local", results="results")
    print(done.plan.to_train_max, done.text())   # the runs it planned, the verdict per cell

Its steps, each a function of this package: :func:`derive_bench` (the candidate's grid under
the protocol), :func:`plan`, :func:`run` (the phases) and :func:`judge` (the verdict).

The parts: the protocol file (:mod:`.protocol`) and the shipped ones (:mod:`.shipped`), each
arm's search space (:mod:`.space`), the ordinary grid it derives (:mod:`.derive`), the phases
run as submits (:mod:`.phases`), the verdict (:mod:`.verdict`) and its text (:mod:`.render`),
one whole bench (:mod:`.session`). The bench is a client of :mod:`harness.services` (submits,
plans, result rows, selections; re-exported by the facade :mod:`harness.api`, which sits above
the bench) and of the statistics facade :mod:`harness.analysis.stats`; import-linter contracts
keep it from the layers below.
"""

from __future__ import annotations

from harness.bench.derive import Derived, derive, derive_bench
from harness.bench.phases import Plan, Progress, plan, run
from harness.bench.protocol import Protocol, load_protocol
from harness.bench.session import BenchResult, bench
from harness.bench.shipped import DEFAULT_SCALE, SCALES, find_protocol, protocol_dirs, scale_name
from harness.bench.verdict import Verdict, judge

__all__ = [
    "DEFAULT_SCALE",
    "SCALES",
    "BenchResult",
    "Derived",
    "Plan",
    "Progress",
    "Protocol",
    "Verdict",
    "bench",
    "derive",
    "derive_bench",
    "find_protocol",
    "judge",
    "load_protocol",
    "plan",
    "protocol_dirs",
    "run",
    "scale_name",
]
