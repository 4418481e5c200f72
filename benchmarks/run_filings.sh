#!/usr/bin/env bash
# FinanceBench (issue 24): the default against flat hybrid on the same index, in the shared store (all 48
# filings, no filter) and the single-document setting (the question's filing), recall within word budgets,
# and the identity variants, every one a --search-variant of one run (same index, same questions).
#   bash benchmarks/run_filings.sh              # both settings
#   bash benchmarks/run_filings.sh fb-shared    # or one: fb-shared fb-single
#   EXTRA="--build-variant detect_headings=true" bash benchmarks/run_filings.sh   # a build variant too
# FinanceBench is CC BY-NC: output goes to $OUT (outside git); commit only the rows
# `python benchmarks/filings_table.py $OUT/*.json [--peer PEER.json]` prints.
set -euo pipefail
REPO=$(pwd)
PY=${PY:-$REPO/.venv/bin/python}
BENCH_CACHE=${DRAG_KNEE_BENCH_CACHE:-$(dirname "$REPO")/cache}   # caches outside the checkout: ../cache beside it
OUT=${OUT:-$BENCH_CACHE/filings/runs}
CACHE=${CACHE:-$BENCH_CACHE/emb}              # passage vectors, one file per encoder fingerprint
INDEX=${INDEX:-$BENCH_CACHE/filings/eval-idx} # the built indexes, reused by every later run
export DRAG_KNEE_DATASETS=${DRAG_KNEE_DATASETS:-$(cd "$REPO/../shared/datasets" && pwd)}
export DRAG_KNEE_MODEL_PATH=${DRAG_KNEE_MODEL_PATH:-$(cd "$REPO/../shared/models/all-MiniLM-L6-v2-onnx-int8" && pwd)}
mkdir -p "$OUT"
which=${1:-all}
M=(-m 'flat_hybrid_*' -m drag_knee -m 'drag_knee{*' -m 'drag_knee_w*' -m 'drag_knee[[]*' -m 'drag_knee_rrf')
V=()
for v in ${VARIANTS:-identity_weight=0,focus.identity_weight=0 \
    identity_weight=0.5,focus.identity_weight=0 identity_weight=0,focus.identity_weight=1 \
    identity_weight=0.5,focus.identity_weight=0.5 identity_weight=0.5,focus.identity_weight=1 \
    identity_weight=1,focus.identity_weight=1 identity_weight=1,focus.identity_weight=2 \
    focus.root_weight=0.5 identity_weight=0.5,focus.identity_weight=1,focus.root_weight=0.5 \
    identity_weight=0.5,focus.identity_weight=1,focus.global_leaves=none}; do
  V+=(--search-variant "$v")
done
run() {  # name, extra arguments
  local name=$1; shift
  if [[ $which == all || $which == "$name" ]]; then
    nice -n 10 "$PY" benchmarks/eval.py --dataset financebench --out "$OUT/$name" --embedding-cache "$CACHE" \
      --index-dir "$INDEX" --no-plot -q --json "${M[@]}" "${V[@]}" ${EXTRA:-} "$@" > "$OUT/$name.json"
  fi
}
run fb-shared --shared-store
run fb-single --single
