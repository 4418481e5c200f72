#!/usr/bin/env bash
# The frozen default on every dataset: the runs behind benchmarks/RESULTS.md "The default against flat
# search, per dataset" (how they were reached: benchmarks/history/RESULTS-2026.md, "Passages by default",
# "budget"). Each run: flat hybrid top-k (leaves, and pages ranked by their passages), the
# default (drag_knee) and the previous search default (drag_knee_rrf) on the default index (long
# pages as passages), then the same on an index of whole pages ([passage_words=none], the build
# default before "Passages by default").
#   bash benchmarks/run_default.sh            # all eight runs
#   bash benchmarks/run_default.sh qmsum      # one of the names below
# MMLongBench-Doc (CC BY-NC) and QMSum text must never enter git: output goes to $OUT (outside the
# repository); commit only the rows `python benchmarks/longdoc_table.py $OUT/*.json` prints (and, with
# --budgets, recall within 500 / 1,000 / 2,000 words: search(max_tokens=N) against flat filled to N).
set -euo pipefail
REPO=$(pwd)
PY=${PY:-$REPO/.venv/bin/python}
BENCH_CACHE=${DRAG_KNEE_BENCH_CACHE:-$(dirname "$REPO")/cache}   # caches outside the checkout: ../cache beside it
OUT=${OUT:-$BENCH_CACHE/default/runs}
CACHE=${CACHE:-$BENCH_CACHE/default/emb}   # passage vectors, one file per encoder fingerprint
export DRAG_KNEE_DATASETS=${DRAG_KNEE_DATASETS:-$(cd "$REPO/../shared/datasets" && pwd)}
export DRAG_KNEE_MODEL_PATH=${DRAG_KNEE_MODEL_PATH:-$(cd "$REPO/../shared/models/all-MiniLM-L6-v2-onnx-int8" && pwd)}
mkdir -p "$OUT"
which=${1:-all}
M=(-m 'flat_hybrid_*' -m drag_knee -m 'drag_knee[[]*' -m drag_knee_rrf -m 'drag_knee_w[0-9]*')
run() {  # name, dataset, extra arguments
  local name=$1 ds=$2; shift 2
  if [[ $which == all || $which == "$name" ]]; then
    nice -n 10 "$PY" benchmarks/eval.py --dataset "$ds" --out "$OUT/$name" --embedding-cache "$CACHE" \
      --no-plot -q --json "${M[@]}" "$@" > "$OUT/$name.json"
  fi
}
P=(--build-variant passage_words=none)
run mmlb-all mmlongbench "${P[@]}"
run mmlb20 mmlongbench --max-doc-pages 20 "${P[@]}"
run mmlb-shared mmlongbench --shared-store "${P[@]}"
run qmsum qmsum "${P[@]}"
run covidqa30 covidqa --limit-docs 30 "${P[@]}"
run hotpotqa hotpotqa "${P[@]}"
run xqen xquad-en --limit-questions 400 "${P[@]}"
run xqru xquad-ru --limit-questions 400 "${P[@]}"
