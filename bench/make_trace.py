"""A synthetic trace to replay (`workload.arrival = "trace"`): one row per create, in time order,
written in record batches (a trace of any length is made in bounded memory).

    python bench/make_trace.py --rows 3000 --out configs/traces/synthetic.csv   # the shipped one
    python bench/make_trace.py --rows 1000000 --out /tmp/trace.parquet

Creates arrive as a Poisson process at `--rate` per second. Most rows name a template of
configs/trace-replay.toml (small : medium : large = 6 : 3 : 1); one in ten names none and gives
its own vCPUs and memory instead. Four in five give a lifetime, heavy-tailed (Pareto, tail
index 1.5, mean 20 s); the others leave it empty, to be drawn from the template's distribution.
Seeded: the same arguments make the same file.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
from bench_args import bench_parser

SCHEMA = pa.schema(
    [
        ("time_s", pa.float64()),
        ("template", pa.string()),
        ("vcpu", pa.float64()),
        ("memory_mib", pa.float64()),
        ("lifetime_s", pa.float64()),
    ]
)
TEMPLATES = (("small", 6), ("medium", 3), ("large", 1))
OWN_SIZES = ((0.5, 512.0), (4.0, 8192.0))
"""(vCPUs, MiB) of a row that names no template."""
BATCH_ROWS = 65_536
LIFETIME_ALPHA = 1.5
LIFETIME_MEAN_S = 20.0


def batches(rows: int, rate: float, seed: int) -> Iterator[pa.RecordBatch]:
    rng = random.Random(seed)
    names = [name for name, _ in TEMPLATES]
    weights = [weight for _, weight in TEMPLATES]
    scale = LIFETIME_MEAN_S * (LIFETIME_ALPHA - 1) / LIFETIME_ALPHA
    t = 0.0
    for start in range(0, rows, BATCH_ROWS):
        columns: list[list] = [[] for _ in SCHEMA]
        for _ in range(min(BATCH_ROWS, rows - start)):
            t += rng.expovariate(rate)
            if rng.random() < 0.1:
                template, (vcpu, memory) = None, rng.choice(OWN_SIZES)
            else:
                template, vcpu, memory = rng.choices(names, weights)[0], None, None
            life = None
            if rng.random() < 0.8:
                life = round(scale * rng.paretovariate(LIFETIME_ALPHA), 3)
            row = (round(t, 3), template, vcpu, memory, life)
            for column, value in zip(columns, row, strict=True):
                column.append(value)
        yield pa.RecordBatch.from_arrays(
            [pa.array(c, f.type) for c, f in zip(columns, SCHEMA, strict=True)], schema=SCHEMA
        )


def write(path: Path, rows: int, rate: float, seed: int) -> None:
    """The trace as CSV (by its suffix) or Parquet."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix != ".csv":
        with pq.ParquetWriter(path, SCHEMA) as writer:
            for batch in batches(rows, rate, seed):
                writer.write_batch(batch)
        return
    with path.open("wb") as f:
        f.write((",".join(SCHEMA.names) + "\n").encode())  # pyarrow would quote every name
        options = pcsv.WriteOptions(include_header=False, quoting_style="none")
        with pcsv.CSVWriter(f, SCHEMA, write_options=options) as writer:
            for batch in batches(rows, rate, seed):
                writer.write_batch(batch)


def main() -> None:
    parser = bench_parser(__doc__, "the smallest run of every part")
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--rate", type=float, default=50.0, help="creates per second")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True, help="a .csv or .parquet file")
    args = parser.parse_args()
    if args.tiny:
        args.rows = 100
    write(args.out, args.rows, args.rate, args.seed)
    print(f"{args.out}: {args.rows} rows")


if __name__ == "__main__":
    main()
