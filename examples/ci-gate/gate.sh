#!/usr/bin/env bash
# Gate a change on the placement baseline of its merge base (docs/guides/baseline.md; the
# workflow there calls this script, and tests/project/test_ci_gate.py runs that workflow's
# steps against two commits of a scratch repository).
#
#   gate.sh merge-base   print the commit HEAD is compared with: its merge base with $BASE_REF
#   gate.sh baseline     run the scenario at HEAD and keep it as HEAD's baseline
#   gate.sh gate         run the scenario at HEAD and compare it with the merge base's baseline:
#                        exit 99 when a column of $FAIL_ON is worse for any strategy; with no
#                        baseline of the merge base (the first run, or the stored one expired),
#                        keep this run as HEAD's baseline, say so, and pass
#
# Settings, from the environment: SCENARIO (configs/seed-herd.toml), SEEDS (20), STRATEGIES
# (every strategy the harness ships), FAIL_ON (cv,failed_frac,p99_place_ms), ALLOW_DIFF
# (config keys a change may alter on purpose, comma-separated: none), BASE_REF
# (origin/main), BASELINES (.placement-baselines: one folder per commit, kept by the CI's
# cache), OUT (placement-run: this run, its report and its comparison), HARNESS (harness).
set -euo pipefail

HARNESS=${HARNESS:-harness}
SCENARIO=${SCENARIO:-configs/seed-herd.toml}
SEEDS=${SEEDS:-20}
FAIL_ON=${FAIL_ON:-cv,failed_frac,p99_place_ms}
BASE_REF=${BASE_REF:-origin/main}
BASELINES=${BASELINES:-.placement-baselines}
OUT=${OUT:-placement-run}
ALLOW_DIFF=${ALLOW_DIFF:-}

say() {  # a line the CI shows as a notice (GitHub Actions), else on stderr
    if [ -n "${GITHUB_ACTIONS:-}" ]; then echo "::notice title=placement gate::$*"; fi
    echo "placement gate: $*" >&2
}

strategies() {  # every strategy the harness ships, comma-separated (not those of plugins)
    if [ -n "${STRATEGIES:-}" ]; then echo "$STRATEGIES"; return; fi
    $HARNESS plugins | awk '$1 == "strategy" && $3 == "harness" { print $2 }' | paste -sd, -
}

run() {  # the scenario under every strategy into $OUT, then what else is asked ($@)
    rm -rf "$OUT"
    $HARNESS run "$SCENARIO" --compare "$(strategies)" --seeds "$SEEDS" --out "$OUT" --quiet "$@"
}

keep() {  # this run as the baseline of commit $1, which it records
    mkdir -p "$BASELINES"
    rm -rf "${BASELINES:?}/$1"
    cp -r "$OUT" "$BASELINES/$1"
    echo "$1" > "$BASELINES/$1/commit"
}

head=$(git rev-parse HEAD)
case "${1:-}" in
merge-base)
    git merge-base "$BASE_REF" HEAD
    ;;
baseline)
    run
    keep "$head"
    say "kept the baseline of $head"
    ;;
gate)
    base=$(git merge-base "$BASE_REF" HEAD)
    if [ ! -f "$BASELINES/$base/run.json" ]; then
        run
        keep "$head"
        say "no baseline of the merge base $base (the first run, or it expired): nothing compared; this run is kept as the baseline of $head"
        exit 0
    fi
    say "compared with the baseline of $(cat "$BASELINES/$base/commit"), the merge base of HEAD and $BASE_REF"
    allowed=()
    for key in ${ALLOW_DIFF//,/ }; do allowed+=(--allow-diff "$key"); done
    code=0
    run --baseline "$BASELINES/$base" --fail-on "$FAIL_ON" "${allowed[@]}" || code=$?
    keep "$head"
    echo "$base" > "$OUT/baseline-commit"
    exit "$code"
    ;;
*)
    echo "usage: gate.sh merge-base|baseline|gate" >&2
    exit 2
    ;;
esac
