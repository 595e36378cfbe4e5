#!/usr/bin/env bash
# make sanitize: every course kernel under compute-sanitizer memcheck, racecheck and synccheck,
# at small and odd sizes (tools/sanitize_driver.py). GPU only. Writes results/sanitize-<gpu>.txt;
# the raw logs stay in build/sanitize/. Exit status 0 only when all three tools report 0 errors.
#   SANITIZE_PY=python3 CS=/path/to/compute-sanitizer bash tools/sanitize.sh
set -uo pipefail
cd "$(dirname "$0")/.."
# the course's .venv when it has CuPy, else python3
PY=${SANITIZE_PY:-}
if [[ -z "$PY" ]]; then
  if [[ -x .venv/bin/python ]] && .venv/bin/python -c "import cupy" 2>/dev/null; then PY=.venv/bin/python; else PY=python3; fi
fi
CS=${CS:-/usr/local/cuda/bin/compute-sanitizer}
if [[ ! -x "$CS" ]]; then CS=$(command -v compute-sanitizer || true); fi
if [[ -z "$CS" ]]; then
  echo "compute-sanitizer not found (looked at /usr/local/cuda/bin and on PATH); set CS=/path/to/compute-sanitizer" >&2
  exit 2
fi
LOGS=build/sanitize
rm -rf "$LOGS" && mkdir -p "$LOGS"
"$CS" --version | tail -1 > "$LOGS/version.txt"
# memcheck: padding after every allocation makes small overruns land outside any buffer
# API errors that CuPy provokes and handles itself (probing) are not kernel bugs: not reported;
# a kernel's own failure still shows as its case's EXCEPTION verdict
help=$("$CS" --help 2>/dev/null)
pad=()
if grep -q -- '--padding' <<<"$help"; then pad+=(--padding 64); fi
api=()
if grep -q -- '--report-api-errors' <<<"$help"; then api+=(--report-api-errors no); fi
# one plain run first: CuPy compiles every kernel (NVRTC) and its own helpers once and caches them,
# so the three sanitizer runs do not; and the cases' verdicts without a sanitizer, for comparison
COURSE_DEVICE=gpu timeout 150 "$PY" tools/sanitize_driver.py run > "$LOGS/plain.log" 2>&1
rc=$?
if [[ $rc == 2 ]]; then cat "$LOGS/plain.log" >&2; echo "no GPU: make sanitize needs one" >&2; exit 2; fi
echo "plain run (no sanitizer): exit status $rc, $(grep -c '^@@end' "$LOGS/plain.log") cases; $(grep -c '| PASS' "$LOGS/plain.log") PASS"
t0=$(date +%s)
for tool in memcheck racecheck synccheck; do
  opts=(--tool "$tool" --print-limit 50 "${api[@]}")
  if [[ $tool == memcheck ]]; then opts+=("${pad[@]}"); fi
  # racecheck tracks every shared-memory access: the slowest tool by far (SANITIZE_TIMEOUT, seconds per tool)
  ( COURSE_DEVICE=gpu timeout "${SANITIZE_TIMEOUT:-450}" "$CS" "${opts[@]}" "$PY" tools/sanitize_driver.py run \
      > "$LOGS/$tool.log" 2>&1; echo $? > "$LOGS/$tool.rc" ) &
done
wait
echo "compute-sanitizer: three tools in $(( $(date +%s) - t0 )) s (logs in $LOGS/)"
"$PY" tools/sanitize_driver.py summarize "$LOGS"
