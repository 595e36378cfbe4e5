#!/usr/bin/env bash
# All GPU tests (tests/test_gpu*.py) with the GPU backend; the log goes into the bundle.
B=$1
COURSE_DEVICE=gpu timeout 300 python3 -m pytest tests/test_gpu*.py -q -p no:cacheprovider -rfE > "$B/tests_gpu.log" 2>&1
tail -8 "$B/tests_gpu.log"
