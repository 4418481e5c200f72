#!/usr/bin/env bash
# The exact commands behind benchmarks/history/RESULTS-2026.md "## context: ..." (headings as sections, context in leaves).
#   bash benchmarks/run_context.sh            # every run below, one after another (~1.5 h on 2 busy shared cores)
#   bash benchmarks/run_context.sh mmlb20     # one of: mmlb20 mmlb20-shared xqen mmlb20-outline covidqa30 qmsum6
# Per-question output goes to $OUT (outside git: MMLongBench-Doc and QMSum licenses); the aggregate rows:
#   python benchmarks/longdoc_table.py $OUT/mmlb20.json ... --methods drag_knee
#   python benchmarks/subset_gain.py $OUT/mmlb20-outline --max-doc-pages 20      # the documents with bookmarks
set -euo pipefail
REPO=$(pwd)
PY=${PY:-$REPO/.venv/bin/python}
BENCH_CACHE=${DRAG_KNEE_BENCH_CACHE:-$(dirname "$REPO")/cache}   # caches outside the checkout: ../cache beside it
OUT=${OUT:-$BENCH_CACHE/context/runs}
CACHE=${CACHE:-$BENCH_CACHE/context/emb}   # passage vectors by text SHA-1 (a copy of run_longdoc.sh's to start)
export DRAG_KNEE_DATASETS=${DRAG_KNEE_DATASETS:-$(cd "$REPO/../shared/datasets" && pwd)}
export DRAG_KNEE_MODEL_PATH=${DRAG_KNEE_MODEL_PATH:-$(cd "$REPO/../shared/models/all-MiniLM-L6-v2-onnx-int8" && pwd)}
export OMP_NUM_THREADS=1
mkdir -p "$OUT"
which=${1:-all}
CTX=leaf_context=title+path+page
run() {  # name, dataset, extra arguments
  local name=$1 ds=$2; shift 2
  if [[ $which == all || $which == "$name" ]]; then
    nice -n 10 "$PY" benchmarks/eval.py --dataset "$ds" --out "$OUT/$name" --embedding-cache "$CACHE" \
      --no-plot -q --json -m 'flat_hybrid_*' -m drag_knee -m 'drag_knee[[]*' "$@" > "$OUT/$name.json"
  fi
}
run mmlb20 mmlongbench --max-doc-pages 20 --build use_outline=false --build-variant $CTX --build-variant detect_headings=true \
  --build-variant passage_words=120 --build-variant passage_words=120,$CTX --build-variant passage_words=120,detect_headings=true,$CTX
run mmlb20-shared mmlongbench --shared-store --max-doc-pages 20 --build use_outline=false --build-variant $CTX \
  --build-variant detect_headings=true --build-variant passage_words=120 --build-variant passage_words=120,$CTX \
  --build-variant passage_words=120,detect_headings=true,$CTX
run xqen xquad-en --limit-questions 400 --build-variant $CTX --build-variant leaf_context=title
run mmlb20-outline mmlongbench --max-doc-pages 20 --build use_outline=false --build-variant use_outline=true \
  --build-variant use_outline=true,$CTX
run covidqa30 covidqa --limit-docs 30 --build-variant $CTX --build-variant detect_headings=true
run qmsum6 qmsum --limit-docs 6 --build-variant $CTX
