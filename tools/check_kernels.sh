#!/usr/bin/env bash
# Compile every kernels/*.cu for sm_80 and sm_90 with nvcc, as CI does, and the Hopper-only files
# (kernels/*_sm90a.cu, whose real code exists only for the arch-specific target) for sm_90a too;
# no GPU needed. Prints each kernel's registers / shared memory / spills (ptxas -v); spills in the
# sm_90a build fail the check (a wgmma accumulator in local memory is a bug, not a slowdown).
set -uo pipefail
cd "$(dirname "$0")/.."
NVCC=${NVCC:-$(command -v nvcc || true)}
if [ -z "$NVCC" ] && [ -x /usr/local/cuda/bin/nvcc ]; then NVCC=/usr/local/cuda/bin/nvcc; fi
if [ -z "$NVCC" ]; then
  echo "SKIPPED kernel compile check: no nvcc on this machine (install the CUDA toolkit to enable it)"
  exit 0
fi
fail=0; n=0
for f in kernels/*.cu; do
  for arch in 80 90; do
    n=$((n+1))
    if out=$("$NVCC" -std=c++17 -arch=sm_$arch -cubin -o /dev/null -Xptxas -v "$f" 2>&1); then
      echo "ok   sm_$arch $f: $(echo "$out" | grep -c 'Used') kernels; $(echo "$out" | grep -o 'Used [0-9]* registers' | sort -u | tr '\n' ' ')"
      if echo "$out" | grep -q "bytes spill stores" && echo "$out" | grep -v " 0 bytes spill stores" | grep -q "spill stores"; then
        echo "     note: spills in $f for sm_$arch"
      fi
    else
      echo "FAIL sm_$arch $f"; echo "$out"; fail=1
    fi
  done
done
for f in kernels/*_sm90a.cu; do
  [ -e "$f" ] || continue
  n=$((n+1))
  if out=$("$NVCC" -std=c++17 -gencode=arch=compute_90a,code=sm_90a -cubin -o /dev/null -Xptxas -v "$f" 2>&1); then
    echo "ok   sm_90a $f: $(echo "$out" | grep -c 'Used') kernels; $(echo "$out" | grep -o 'Used [0-9]* registers' | sort -u | tr '\n' ' ')"
    if echo "$out" | grep -E "bytes (spill stores|stack frame)" | grep -vq "^ *0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"; then
      echo "FAIL sm_90a $f: spills or a stack frame:"; echo "$out" | grep -B3 -E "[1-9][0-9]* bytes (spill|stack)"; fail=1
    fi
    if echo "$out" | grep -qiE "warning"; then
      echo "     warnings in $f for sm_90a:"; echo "$out" | grep -iE "warning"
    fi
  else
    echo "FAIL sm_90a $f"; echo "$out"; fail=1
  fi
done
echo "kernel compile check: $n builds, $([ $fail = 0 ] && echo all passed || echo FAILURES)"
exit $fail
