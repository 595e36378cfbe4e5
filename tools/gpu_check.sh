#!/usr/bin/env bash
# make gpu-check (README "Checking on a GPU"): everything the course checks on a CUDA GPU, in order; a stage
# that fails does not stop the ones after it, and a summary ends the run. Everything is written under
# results/ (<gpu> is the GPU's slug from helpers.device, e.g. nvidia-h200):
#   record    python -m helpers.record $RECORD_ARGS          -> results/<gpu>.json
#   tests     COURSE_DEVICE=gpu pytest tests/gpu; then the CPU tests' sweeps whole: pytest tests --full -m sweep
#   nbval     nbval with the GPU backend on the committed notebooks, against the committed records
#   sanitize  tools/sanitize.sh (compute-sanitizer)           -> results/sanitize-<gpu>.txt
#   ncu       tools/ncu_counters.py $NCU_ARGS (Nsight Compute) -> results/ncu-<gpu>.json
#   dumps     tools/kernel_dumps.sh (nvcc, cuobjdump)          -> results/build-<gpu>/
# Each stage's output goes to results/logs/<stage>-<gpu>.log; the environment and the summary to
# results/logs/gpu-check-<gpu>.log. Exit status: 0 when no stage failed (skipped ones are listed), 1 otherwise,
# 2 without a usable GPU.
#
# Settings (environment, or make variables: make gpu-check PY=python3 STAGES="tests nbval"):
#   PY=python3          the Python to use (default python3; make passes .venv/bin/python unless PY is given);
#                       it needs cupy, numpy, matplotlib, ml_dtypes, and pytest, nbval, ipykernel for those stages
#   STAGES="..."        the stages to run, in the order given (default: all six, in the order above)
#   WHEELS=dir          offline: pip-install dir/*.whl (pytest, nbval, ...) into build/gpu-check/site, put it on PYTHONPATH
#   STAGE_TIMEOUT=3600  seconds each stage may run
#   RECORD_ARGS, NCU_ARGS, NBVAL   extra arguments (NBVAL: the nbval options, as `make nbval` uses them)
#   RECORDS=asis        nbval against results/*.json as they are (after `make notebooks` on a new record, or
#                       in a copied tree whose .git is older than its files); also what happens, without
#                       RECORDS, when the course root is not the top of a git checkout (a copy of the course
#                       inside another repository: that repository does not track results/)
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-python3}
STAGES=${STAGES:-record tests nbval sanitize ncu dumps}
STAGE_TIMEOUT=${STAGE_TIMEOUT:-3600}
NBVAL=${NBVAL:---nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout 900}
WORK=build/gpu-check
ASIDE=$WORK/records-aside
export PYTHONUNBUFFERED=1
# the notebooks' kernels start in notebooks/: the repository root on the path lets them import helpers
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$WORK" results/logs

if [[ -n "${WHEELS:-}" ]]; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$WORK/site" \
    "$WHEELS"/*.whl && export PYTHONPATH="$PWD/$WORK/site:$PYTHONPATH"
fi
TO=()
if command -v timeout >/dev/null; then TO=(timeout "$STAGE_TIMEOUT"); fi

# --------------------------------------------------------------------------- the GPU
gpu=$(COURSE_DEVICE=gpu "$PY" -c 'from helpers.device import require_gpu; g = require_gpu("make gpu-check"); print(g.slug, g.sm, g.name)' 2>"$WORK/gpu.err" | tail -n 1)
if [[ $? -ne 0 || -z "$gpu" ]]; then
  cat "$WORK/gpu.err" >&2
  echo "make gpu-check needs a CUDA GPU that CuPy can use, with PY=$PY" >&2
  exit 2
fi
read -r slug arch gpu_name <<<"$gpu"
SUMMARY=results/logs/gpu-check-$slug.log

# --------------------------------------------------------------------------- nbval against the committed records
# The committed notebooks' outputs were made from the committed results/*.json (the newest record is what the
# lessons show): a record this run just wrote, or any other uncommitted one, is set aside while nbval runs.
restore_records() {
  if [[ -d $ASIDE ]]; then
    for f in "$ASIDE"/*.json; do [[ -e $f ]] && mv -f "$f" results/; done
    rm -rf "$ASIDE"
  fi
}
# Whether results/ belongs to the course's own git repository: true when the repository git finds here has
# the course root as its top level. A copy of the course inside another checkout is not (git would answer
# for that other repository, which does not track results/), and counts as no checkout at all.
course_repo() {
  local top
  top=$(git rev-parse --show-toplevel 2>/dev/null) || return 1
  [[ -n $top && "$(cd "$top" && pwd -P)" == "$(pwd -P)" ]]
}
with_committed_records() {
  restore_records
  if [[ ${RECORDS:-} == asis ]]; then     # RECORDS=asis: the notebooks were made from results/ as they are now
    echo "(RECORDS=asis: nbval runs against results/*.json as they are)"
    "$@"
    return $?
  fi
  if ! course_repo; then
    echo "(results/ is not in a git checkout of the course itself: nbval runs against results/*.json as they are)"
    "$@"
    return $?
  fi
  mkdir -p "$ASIDE"
  local f rc
  for f in results/*.json; do
    [[ -e $f ]] || continue
    if ! git ls-files --error-unmatch "$f" >/dev/null 2>&1; then
      mv "$f" "$ASIDE/" && echo "set aside while nbval runs (not committed): $f"
    elif ! git diff --quiet HEAD -- "$f"; then
      cp "$f" "$ASIDE/" && git show "HEAD:$f" > "$f" && echo "set aside while nbval runs (changed since HEAD): $f"
    fi
  done
  "$@"
  rc=$?
  restore_records
  return $rc
}
trap restore_records EXIT
restore_records             # left over from an interrupted run

# --------------------------------------------------------------------------- the stages
needs_modules() {           # needs_modules MOD...: exit status 3 (skipped) when one is missing
  local m
  for m in "$@"; do
    if ! "$PY" -c "import $m" 2>/dev/null; then echo "SKIPPED: $PY cannot import $m"; return 3; fi
  done
}
stage_record() { COURSE_DEVICE=gpu ${TO[@]+"${TO[@]}"} "$PY" -m helpers.record ${RECORD_ARGS:-}; }
stage_tests() {
  needs_modules pytest || return
  local rc=0 rc_sweeps=0
  # the GPU tests (tests/gpu: collected only when named), then every case of the sweeps the unit tests sample
  # (the check's mutation matrices over every kernel and rung, every knob value built with nvcc, ...)
  COURSE_DEVICE=gpu ${TO[@]+"${TO[@]}"} "$PY" -B -m pytest tests/gpu -q -p no:cacheprovider -rfE || rc=$?
  COURSE_DEVICE=cpu ${TO[@]+"${TO[@]}"} "$PY" -B -m pytest tests --full -m sweep -q -p no:cacheprovider -rfE \
    || rc_sweeps=$?
  [[ $rc != 0 ]] && return $rc
  return $rc_sweeps
}
stage_nbval() {
  needs_modules pytest nbval ipykernel || return
  # shellcheck disable=SC2086
  with_committed_records env COURSE_DEVICE=gpu ${TO[@]+"${TO[@]}"} "$PY" -m pytest $NBVAL notebooks -q -p no:cacheprovider
}
stage_sanitize() {
  SANITIZE_PY="$PY" ${TO[@]+"${TO[@]}"} bash tools/sanitize.sh
  local rc=$?
  if [[ $rc == 2 ]]; then return 3; fi       # no compute-sanitizer (the GPU is there)
  return $rc
}
stage_ncu() {
  ${TO[@]+"${TO[@]}"} "$PY" tools/ncu_counters.py ${NCU_ARGS:-}
  local rc=$?
  if [[ $rc == 2 ]]; then return 3; fi       # no ncu
  return $rc
}
stage_dumps() {
  ${TO[@]+"${TO[@]}"} bash tools/kernel_dumps.sh "results/build-$slug" "$arch"
  local rc=$?
  if [[ $rc == 2 ]]; then return 3; fi       # no nvcc
  return $rc
}
# the line of a stage's log that says how it went
key_line() {
  local pat n=1
  case $1 in
    record) pat='^wrote |^make record needs|Error' ;;
    tests) pat='[0-9]+ (passed|failed|errors?|skipped)|no tests ran|^SKIPPED'; n=2 ;;
    nbval) pat='[0-9]+ (passed|failed|errors?|skipped)|no tests ran|^SKIPPED' ;;
    sanitize) pat='^verdict:|^SKIPPED|not found' ;;
    ncu) pat='^metrics not collected|^profiled |not found|cannot profile|^no GPU'; n=2 ;;
    dumps) pat='^kernel dumps:|^SKIPPED' ;;
    *) pat='.' ;;
  esac
  { grep -E "$pat" "$2" || tail -n 1 "$2"; } | tail -n "$n" | sed 's/\x1b\[[0-9;]*m//g' | tr '\n' ' ' | cut -c1-240
}

{
  echo "== make gpu-check on $(hostname), $(date -u +%FT%TZ)"
  echo "GPU: $gpu_name ($arch); stages: $STAGES; PY=$PY"
  if course_repo && commit=$(git rev-parse --short HEAD 2>/dev/null); then
    echo "commit: $commit$(git diff --quiet HEAD || echo ' (with uncommitted changes)')"
  fi
  # the code that ran, whatever the checkout's git metadata says (a copied tree can carry a stale .git)
  echo "source tree: $(find helpers kernels tools tests -type f \( -name '*.py' -o -name '*.cu' -o -name '*.cuh' -o -name '*.sh' \) | LC_ALL=C sort | xargs sha1sum | sha1sum | cut -c1-12) (sha1 of helpers, kernels, tools, tests)"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
  fi
  "$PY" -c "import sys, cupy, numpy, matplotlib; print('Python', sys.version.split()[0], '| cupy', cupy.__version__, '| numpy', numpy.__version__, '| matplotlib', matplotlib.__version__)"
  COURSE_DEVICE=gpu "$PY" -c "import helpers; helpers.summary()"
} 2>&1 | tee "$SUMMARY"

results=()
failed=0
for s in $STAGES; do
  log=results/logs/$s-$slug.log
  [[ $s == tests ]] && log=results/logs/tests-gpu-$slug.log
  t0=$(date +%s)
  echo
  echo "== $s ($(date -u +%T)), log: $log"
  if declare -F "stage_$s" >/dev/null; then
    "stage_$s" > "$log" 2>&1
    rc=$?
  else
    echo "unknown stage $s (stages: record tests nbval sanitize ncu dumps)" > "$log"
    rc=1
  fi
  dt=$(( $(date +%s) - t0 ))
  tail -n 12 "$log"
  case $rc in
    0) status=PASS ;;
    3) status=SKIP ;;
    124|137) status=TIMEOUT; failed=1 ;;
    *) status="FAIL($rc)"; failed=1 ;;
  esac
  results+=("$(printf '%-9s %-9s %5ss  %s' "$s" "$status" "$dt" "$(key_line "$s" "$log")")")
done

{
  echo
  echo "== summary: make gpu-check on $gpu_name ($(date -u +%FT%TZ))"
  printf '%s\n' "${results[@]}"
  echo "logs: results/logs/*-$slug.log; results: results/$slug.json, results/sanitize-$slug.txt, results/ncu-$slug.json, results/build-$slug/"
  [[ $failed == 0 ]] && echo "verdict: no stage failed" || echo "verdict: SOME STAGES FAILED"
} 2>&1 | tee -a "$SUMMARY"
exit $failed
