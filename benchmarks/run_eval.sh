#!/usr/bin/env bash
# The exact commands behind benchmarks/results/ (the 2026-11-30 run, pages as leaves; its figures are the
# covidqa .. xquad-ru sections of benchmarks/history/RESULTS-2026.md). Run from the repository root:
#   bash benchmarks/run_eval.sh               # all datasets
#   bash benchmarks/run_eval.sh covidqa       # one of: covidqa xquad-en xquad-ru hotpotqa
#   SNAPSHOT=1 bash benchmarks/run_eval.sh    # pin the package to HEAD (+ the working tree's eval/ and the
#                                             # benchmark scripts) for the whole batch, while others keep committing
# Needs the offline model (DRAG_KNEE_MODEL_PATH or the `offline` extra), the datasets (DRAG_KNEE_DATASETS,
# default ../shared/datasets), llama-index-core (AutoMerging baseline) and matplotlib (plots). The runs
# go through benchmarks/prototypes.py: `python benchmarks/eval.py` (the benchmark dataset loaders of
# benchmarks/datasets, then the library's eval run) plus the proto_* research
# walks. This script, not the package, says which commit ran (DRAG_KNEE_CODE_COMMIT / _CHANGED).
# Passage vectors are cached between runs in $EVAL_CACHE, one file
# per encoder fingerprint (same model and token limit => same vectors); delete it to time cold ingestion.
set -euo pipefail
REPO=$(pwd)
PY=${PY:-$REPO/.venv/bin/python}
OUT=${OUT:-$REPO/benchmarks/results}
EVAL_CACHE=${EVAL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/drag-knee-retriever/eval-cache}
export DRAG_KNEE_MODEL_PATH=${DRAG_KNEE_MODEL_PATH:-$(cd "$REPO/../shared/models/all-MiniLM-L6-v2-onnx-int8" && pwd)}
export DRAG_KNEE_DATASETS=${DRAG_KNEE_DATASETS:-$(cd "$REPO/../shared/datasets" && pwd)}
RUN_DIR=$REPO
export DRAG_KNEE_CODE_COMMIT=$(git rev-parse HEAD)
BENCH=(benchmarks/__init__.py benchmarks/eval.py benchmarks/overview.py benchmarks/prototypes.py benchmarks/datasets)
export DRAG_KNEE_CODE_CHANGED=$(git status --porcelain -- drag_knee_retriever "${BENCH[@]}" | cut -c4- | tr '\n' ' ')
if [[ -n ${SNAPSHOT:-} ]]; then
  RUN_DIR=$(mktemp -d /tmp/drag-knee-snapshot.XXXXXX)
  git archive HEAD drag_knee_retriever | tar -x -C "$RUN_DIR"
  cp -r drag_knee_retriever/eval/. "$RUN_DIR/drag_knee_retriever/eval/"
  rm -rf "$RUN_DIR/drag_knee_retriever/eval/__pycache__"
  mkdir -p "$RUN_DIR/benchmarks" && cp -r "${BENCH[@]}" "$RUN_DIR/benchmarks/"
  rm -rf "$RUN_DIR/benchmarks/datasets/__pycache__"
  export DRAG_KNEE_CODE_CHANGED=$(git status --porcelain -- drag_knee_retriever/eval "${BENCH[@]}" | cut -c4- | tr '\n' ' ')
  export DRAG_KNEE_CODE_SNAPSHOT=$RUN_DIR
fi
export PYTHONPATH=$RUN_DIR   # run from $RUN_DIR so its package (the snapshot or the checkout) is imported
# Build variants: every DRAG, prototype and collapsed-tree method is also run on indexes built these ways.
VARIANTS=(--build-variant inner_vectors=summary --build-variant inner_vectors=centroid --build-variant branching=5
          --build-variant inner_sparse=description)
COMMON=(--embedding-cache "$EVAL_CACHE" --traces 40 --automerging-k 2 --automerging-k 6 --automerging-k 12)
which=${1:-all}

run() {  # name, then extra arguments
  local name=$1; shift
  if [[ $which == all || $which == "$name" ]]; then
    (cd "$RUN_DIR" && "$PY" benchmarks/prototypes.py --dataset "$name" --out "$OUT/$name" "${COMMON[@]}" \
      "${VARIANTS[@]}" "$@" --json > "$OUT/$name.json")
  fi
}

run covidqa --limit-docs 30                 # 30 papers (999 leaves), all 213 questions on them
run xquad-en --limit-questions 400          # all 48 articles (240 leaves), 400 of 1190 questions, spread
run xquad-ru --limit-questions 400          # same questions, Russian text and Russian BM25
run hotpotqa                                # all 994 documents (4137 sentences), all 100 questions

# One page with every dataset's headline, compact table and plot.
(cd "$RUN_DIR" && "$PY" benchmarks/overview.py "$OUT")
