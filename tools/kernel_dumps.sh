#!/usr/bin/env bash
# Compiler output for every kernels/*.cu, which the lessons show when no GPU is present: for each file, nvcc's
# PTX (<file>.<arch>.ptx), its resource report (<file>.ptxas.txt: registers, shared memory, spills) and the
# machine code disassembled by cuobjdump (<file>.<arch>.sass), with a README.md saying how and when.
# A file named *_sm<NN>a.cu holds arch-specific code (wgmma) and is compiled for sm_<NN>a only.
# No GPU needed; `make gpu-check` runs it as its last stage with the GPU's own architecture.
#   bash tools/kernel_dumps.sh [OUTDIR] [ARCH]     (defaults: results/build-nvidia-h200, sm_90)
# Exit status: 0 when every file compiled, 1 otherwise, 2 without nvcc or cuobjdump.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-results/build-nvidia-h200}
ARCH=${2:-sm_90}
NVCC=${NVCC:-$(command -v nvcc || true)}
if [[ -z "$NVCC" && -x /usr/local/cuda/bin/nvcc ]]; then NVCC=/usr/local/cuda/bin/nvcc; fi
if [[ -z "$NVCC" ]]; then
  echo "SKIPPED kernel dumps: no nvcc on this machine (install the CUDA toolkit, or set NVCC=/path/to/nvcc)"
  exit 2
fi
CUOBJDUMP=${CUOBJDUMP:-$(command -v cuobjdump || true)}
for c in "$(dirname "$NVCC")/cuobjdump" /usr/local/cuda/bin/cuobjdump; do
  if [[ -z "$CUOBJDUMP" && -x $c ]]; then CUOBJDUMP=$c; fi
done
if [[ -z "$CUOBJDUMP" ]]; then
  echo "SKIPPED kernel dumps: nvcc is here but cuobjdump is not (set CUOBJDUMP=/path/to/cuobjdump)"
  exit 2
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$OUT"
fail=0; n=0
for f in kernels/*.cu; do
  name=$(basename "$f" .cu)
  arch=$ARCH; gencode=(-arch="$ARCH")
  if [[ $name =~ _sm([0-9]+)a$ ]]; then
    arch=sm_${BASH_REMATCH[1]}a; gencode=(-gencode=arch=compute_${BASH_REMATCH[1]}a,code=$arch)
  fi
  n=$((n + 1))
  # ptxas's "Compile time = ..." lines are left out: they differ on every run, so a rerun would rewrite every
  # report; what stays (registers, shared memory, spills) changes only when the code does.
  "$NVCC" -std=c++17 "${gencode[@]}" -cubin -Xptxas -v -o "$TMP/$name.cubin" "$f" > "$TMP/$name.ptxas" 2>&1
  built=$?
  grep -v 'Compile time = ' "$TMP/$name.ptxas" > "$OUT/$name.ptxas.txt"
  if [[ $built == 0 ]] && "$CUOBJDUMP" -sass "$TMP/$name.cubin" > "$OUT/$name.$arch.sass"; then
    if [[ $arch == "$ARCH" ]]; then "$NVCC" -std=c++17 -arch="$ARCH" -ptx -o "$OUT/$name.$arch.ptx" "$f" || fail=1; fi
    echo "ok   $f ($arch): $(grep -c 'Used' "$OUT/$name.ptxas.txt") kernels"
  else
    echo "FAIL $f ($arch): see $OUT/$name.ptxas.txt"; fail=1
  fi
done
# What the dumps were made from: tests/test_kernels.py compares these hashes with kernels/ as they are now, so a
# kernel changed without new dumps fails the tests (the fix: run this script again).
sha256sum kernels/*.cu kernels/*.cuh > "$OUT/sources.sha256"
version=$("$NVCC" --version | tail -n 1)
driver=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)
cat > "$OUT/README.md" <<EOF
# Compiler output for the course kernels

Written by \`tools/kernel_dumps.sh\` (\`make gpu-check\`, stage \`dumps\`) on $(date -u +%F)${driver:+, on $driver}, with
nvcc ($version): for each \`kernels/*.cu\`, \`nvcc -std=c++17 -arch=$ARCH\` produced the PTX (\`*.$ARCH.ptx\`),
the resource report (\`*.ptxas.txt\`: registers, shared memory, spills) and the machine code disassembled
with \`cuobjdump -sass\` (\`*.$ARCH.sass\`); files named \`*_sm90a.cu\` were compiled for \`sm_90a\` instead
(\`-gencode=arch=compute_90a,code=sm_90a\`). Lessons show these files when no GPU is present. \`sources.sha256\`
names the sources they were made from (tests/test_kernels.py checks it against \`kernels/\`).
EOF
echo "kernel dumps: $n files for $ARCH into $OUT/, $([ $fail = 0 ] && echo all compiled || echo FAILURES)"
exit $fail
