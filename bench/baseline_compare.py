"""How often `harness compare` cries wolf, and how small a change it finds.

    PYTHONPATH=. python bench/baseline_compare.py [--tiny] [--pool 400] [--comparisons 500]
                                                  [--blocks 10] [--seeds 20]

1. False alarms: seed-herd (`stale`) is run on `--pool` seeds; `--comparisons` times, two
   disjoint sets of `--seeds` seeds are drawn from them and compared unpaired, as two runs of
   the same code on other seeds would be. Every `worse` verdict is a false alarm; the nominal
   level is 2.5% (p < 0.05, two-sided, half of it on the worse side). Printed: the share of
   `worse` verdicts among the columns that vary, with the default noise bands and with none,
   the worst column's share, and the share of comparisons with any `worse`.
2. Sensitivity: a planted change of graded size, `Sloppy`: a selector that sends a share `q`
   of the placements to the lowest-numbered candidate instead of the best-scored one. On
   seed-herd's stale views the best-scored candidate is the herd's target, so this spreads the
   load a little better: CV falls with `q`. For each `q`, the same `--blocks` x `--seeds` seeds
   are run with and without it; each block is compared paired (the same seeds) and unpaired
   (against the next block's baseline: other seeds), with no noise band, and the share of
   blocks whose CV is found changed (`better` or `worse`) printed beside the mean change.

`--tiny` runs a handful of seeds and comparisons, to check the script works
(tests/project/test_bench.py): its figures mean nothing."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from bench_args import bench_parser

from harness.api import Selector
from harness.config import load
from harness.engines import real_time
from harness.results.comparison import UNCHANGED, WORSE, Side, compare
from harness.results.run_reader import load_run
from harness.running.runner import run

HERD = Path(__file__).resolve().parent.parent / "configs" / "seed-herd.toml"
SHARES = (0.0025, 0.005, 0.01, 0.02, 0.05, 0.1)
"""The shares of sloppy placements planted."""


class Sloppy(Selector):
    """For a share `share` of the calls (spread evenly), the candidate with the lowest node
    number rather than the best-scored one."""

    name = "sloppy"
    share = 0.0

    def __init__(self, rules):
        super().__init__(rules)
        self.calls = 0

    def select(self, scheduler, candidates, scores):
        if not candidates:
            return None
        self.calls += 1
        wrong = int(self.calls * self.share) > int((self.calls - 1) * self.share)
        if wrong:
            return min(candidates)
        return candidates[min(range(len(scores)), key=scores.__getitem__)]


SLOPPY = {q: type(f"Sloppy{i}", (Sloppy,), {"share": q}) for i, q in enumerate(SHARES)}
globals().update({cls.__name__: cls for cls in SLOPPY.values()})


def summary(seeds: int, first: int = 0, share: float | None = None) -> pd.DataFrame:
    """The summary of seed-herd on `seeds` seeds from `first`, with the sloppy selector of
    `share` (None: the shipped pipeline)."""
    sets = [f"run.seeds={seeds}", f"run.first_seed={first}"]
    if share is not None:
        sets.append(f'placement.selector="bench.baseline_compare:{SLOPPY[share].__name__}"')
    config = load(str(HERD), sets)
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "run"
        run(config, [config.placement.strategy], out)
        return load_run(out, ("summary",))[1]["summary"]


def side(rows: pd.DataFrame, name: str) -> Side:
    meta = {"engine": "virtual", "machine": {}, "harness_version": "bench", "plugins": []}
    return Side(Path(name), "run", meta, rows.reset_index(drop=True), {})


def false_alarms(pool: pd.DataFrame, comparisons: int, seeds: int) -> None:
    rng = np.random.default_rng(0)
    rows = []
    for _ in range(comparisons):
        drawn = rng.choice(pool["seed"].to_numpy(), size=2 * seeds, replace=False)
        a = pool[pool["seed"].isin(drawn[:seeds])]
        b = pool[pool["seed"].isin(drawn[seeds:])]
        for band in ("default", "none"):
            effect = [] if band == "default" else ["0"]
            found = compare(side(a, "A"), side(b, "B"), min_effect=effect, real_time=real_time).rows
            rows.append(found.assign(band=band, comparison=len(rows) // 2))
    frame = pd.concat(rows)
    varying = {c for c in pool.columns if pool[c].dtype != object and pool[c].nunique() > 1}
    frame = frame[frame["column"].isin(varying)]
    print(f"A/A, unpaired, {comparisons} comparisons of {seeds} vs {seeds} disjoint seeds, ")
    print(f"  {len(varying)} columns that vary over {len(pool)} seeds; nominal worse rate 2.5%")
    for band, group in frame.groupby("band"):
        worse = group["verdict"] == WORSE
        per_column = worse.groupby(group["column"]).mean()
        anywhere = worse.groupby(group["comparison"]).any().mean()
        print(
            f"  noise band {band:>7}: worse {worse.mean():.2%} of verdicts, worst column "
            f"{per_column.idxmax()} {per_column.max():.2%}, any column worse in "
            f"{anywhere:.1%} of comparisons"
        )


def sensitivity(blocks: int, seeds: int, shares: tuple[float, ...] = SHARES) -> None:
    base = summary(blocks * seeds)
    print("planted change (a share q of placements to the lowest-numbered candidate), CV,")
    print(f"  {seeds} seeds a block, {blocks} blocks, no noise band: share of blocks found changed")
    print(f"  {'q':>6} {'CV change':>10} {'paired':>7} {'unpaired':>9}")
    for share in shares:
        new = summary(blocks * seeds, share=share)
        paired, unpaired, changes = 0, 0, []
        for block in range(blocks):
            mine = range(block * seeds, (block + 1) * seeds)
            other = range(((block + 1) % blocks) * seeds, ((block + 1) % blocks + 1) * seeds)
            b, n = base[base["seed"].isin(mine)], new[new["seed"].isin(mine)]
            changes.append(n["cv"].mean() / b["cv"].mean() - 1)
            cv = ["cv"]
            found = compare(
                side(b, "A"), side(n, "B"), cv, min_effect=["0"], real_time=real_time
            ).rows
            paired += bool((found["verdict"] != UNCHANGED).any())
            if blocks > 1:  # the next block's baseline: other seeds
                b_other = base[base["seed"].isin(other)]
                found = compare(
                    side(b_other, "A"), side(n, "B"), cv, min_effect=["0"], real_time=real_time
                ).rows
                unpaired += bool((found["verdict"] != UNCHANGED).any())
        print(
            f"  {share:>6.2%} {np.mean(changes):>+10.2%} {paired / blocks:>7.0%} "
            f"{unpaired / blocks:>9.0%}"
        )


def main() -> None:
    parser = bench_parser(__doc__, "a handful of seeds")
    parser.add_argument("--pool", type=int, default=400)
    parser.add_argument("--comparisons", type=int, default=500)
    parser.add_argument("--blocks", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args()
    if args.tiny:
        args.pool, args.comparisons, args.blocks, args.seeds = 12, 3, 2, 6
    false_alarms(summary(args.pool), args.comparisons, args.seeds)
    sensitivity(args.blocks, args.seeds, SHARES[-2:] if args.tiny else SHARES)


if __name__ == "__main__":
    main()
