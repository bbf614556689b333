"""What the parts of a kept level allocate in Python, against the model that sizes them.

The SQL search brings a large level back in parts (``BatchRunner._judged_parts``), each sized by an
estimate of what it costs in Python: per returned (class, sensitive value) row its Arrow and NumPy
columns, per class its count matrix and temporaries (``BYTES_PER_RETURNED_ROW``, ``MATRIX_COPIES``).
This runs ``sqlclose ARGS`` with tracemalloc on (NumPy and Arrow report their buffers to it) and, per
part, measures the peak from its fetch through its judging, against that estimate.

    python benchmarks/probe_part_memory.py anonymize benchmarks/data/rows_1000000/exp5l.toml -q --memory-limit 1GB

Off the product's path: it wraps the search's internals, and tracemalloc slows the job (~+10 %).
docs/performance.md, eighteenth round.
"""

from __future__ import annotations

import sys
import tracemalloc
from collections.abc import Iterator

import numpy as np

from sqlclose.cli import main
from sqlclose.search import batch_runner, items

MB = 1e6
LARGE = 5 * MB  # parts estimated below this are dominated by fixed costs: left out of the ratios


def _measured(record: list[tuple[int, int, int, int]]) -> None:
    """Wrap the part sizing and the part generator to record (peak, estimate, matrix bytes, classes)."""
    estimates: list[int] = []
    sized = batch_runner._parts

    def parts(cost: np.ndarray, budget: int) -> list[tuple[int, int]]:
        ranges = sized(cost, budget)
        estimates[:] = [int(cost[a:b].sum()) for a, b in ranges]
        return ranges

    judged = batch_runner.BatchRunner._judged_parts

    def judged_parts(self: batch_runner.BatchRunner, ids: dict) -> Iterator[items.LevelPart]:
        held = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()  # from here the peak covers the next part's fetch, build and judging
        for n, part in enumerate(judged(self, ids)):
            matrix = sum(c.nbytes for c in part.hist.counts)
            yield part  # the search judges it before asking for the next
            record.append((tracemalloc.get_traced_memory()[1] - held, estimates[n], matrix, part.hist.classes))
            held = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()

    batch_runner._parts = parts
    batch_runner.BatchRunner._judged_parts = judged_parts


def _summary(record: list[tuple[int, int, int, int]]) -> str:
    lines = ["| peak (fetch → judged) | estimate | matrix | classes | peak / estimate |", "|---|---|---|---|---|"]
    for peak, estimate, matrix, classes in sorted(record, key=lambda r: -r[0])[:8]:
        lines.append(f"| {peak / MB:,.1f} MB | {estimate / MB:,.1f} MB | {matrix / MB:,.1f} MB | {classes:,} | "
                     f"{peak / max(estimate, 1):.2f} |")
    large = np.array([(p, e) for p, e, _, _ in record if e > LARGE], dtype=np.float64)
    if len(large):
        ratio = large[:, 0] / large[:, 1]
        lines.append(f"\n{len(record)} parts; {len(large)} estimated over {LARGE / MB:.0f} MB: peak / estimate "
                     f"at most {ratio.max():.2f}, median {np.median(ratio):.2f}")
    return "\n".join(lines)


if __name__ == "__main__":
    record: list[tuple[int, int, int, int]] = []
    _measured(record)
    tracemalloc.start()
    sys.argv = ["sqlclose", *sys.argv[1:]]
    try:
        main(standalone_mode=False)
    finally:
        print(_summary(record))
