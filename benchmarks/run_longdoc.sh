#!/usr/bin/env bash
# The exact commands behind the "Long documents" section of benchmarks/history/RESULTS-2026.md.
#   bash benchmarks/run_longdoc.sh            # all runs below (hours on 2 busy shared cores)
#   bash benchmarks/run_longdoc.sh mmlb20     # one of: mmlb20 mmlb20-p300 qmsum xqen mmlongbench
# MMLongBench-Doc (CC BY-NC) and QMSum text must never enter git: per-question output goes to
# $OUT (default $DRAG_KNEE_BENCH_CACHE/longdoc/runs, that is ../cache/longdoc/runs beside the
# checkout unless set: outside the repository); only the aggregate rows that
# benchmarks/longdoc_table.py prints from the JSON files are committed.
set -euo pipefail
REPO=$(pwd)
PY=${PY:-$REPO/.venv/bin/python}
BENCH_CACHE=${DRAG_KNEE_BENCH_CACHE:-$(dirname "$REPO")/cache}   # caches outside the checkout: ../cache beside it
OUT=${OUT:-$BENCH_CACHE/longdoc/runs}
CACHE=${CACHE:-$BENCH_CACHE/longdoc/emb}   # passage vectors, one file per encoder fingerprint
export DRAG_KNEE_DATASETS=${DRAG_KNEE_DATASETS:-$(cd "$REPO/../shared/datasets" && pwd)}
export DRAG_KNEE_MODEL_PATH=${DRAG_KNEE_MODEL_PATH:-$(cd "$REPO/../shared/models/all-MiniLM-L6-v2-onnx-int8" && pwd)}
mkdir -p "$OUT"
which=${1:-all}
M=(-m 'flat_hybrid_*' -m 'flat_bm25_*' -m 'flat_dense_*' -m flat_hybrid_knee -m 'drag_knee*' -m 'drag_sensitive_*'
   -m 'drag_fixed_*' -m 'drag_branch*')
run() {  # name, dataset, extra arguments
  local name=$1 ds=$2; shift 2
  if [[ $which == all || $which == "$name" ]]; then
    nice -n 10 "$PY" benchmarks/eval.py --dataset "$ds" --out "$OUT/$name" --embedding-cache "$CACHE" \
      --no-plot -q --json "${M[@]}" "$@" > "$OUT/$name.json"
  fi
}
# MMLongBench, single-document setting, the 23 documents of <= 20 pages (93 questions): today's
# default index (outline off, pages as leaves) and the passage variants, each against flat on its own index.
run mmlb20 mmlongbench --max-doc-pages 20 --build use_outline=false --build-variant use_outline=false,passage_words=120
run mmlb20-p300 mmlongbench --max-doc-pages 20 --build use_outline=false --build-variant use_outline=false,passage_words=300
# QMSum, single-meeting setting, all 35 meetings (244 questions); blocks of <= 150 words.
run qmsum qmsum --build-variant passage_words=120
# XQuAD en (the passage variants change 88 / 2 of its 240 paragraphs).
run xqen xquad-en --limit-questions 400 --build-variant passage_words=120 --build-variant passage_words=300
# Not run here for lack of CPU (2 cores shared by 8 engineers): every MMLongBench document, and the shared store.
run mmlongbench mmlongbench --build use_outline=false --build-variant use_outline=false,passage_words=120
run mmlongbench-shared mmlongbench --shared-store --build use_outline=false
# The aggregate rows:
#   python benchmarks/longdoc_table.py $OUT/mmlb20.json $OUT/mmlb20-p300.json $OUT/qmsum.json $OUT/xqen.json
