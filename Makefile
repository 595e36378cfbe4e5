# Tensor Cores course. The two commands a newcomer needs:
#   make course   set up .venv, execute every notebook, write build/ (notebooks + HTML)
#   make test     set up .venv if missing, run the unit tests and nbval on every notebook
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
QUIET := 2>&1 | { grep -v 'is ignored: it is neither' || true; }
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
NBVAL := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout 900

.PHONY: course test unit nbval lab record notebooks kernels-check clean help

help:
	@echo "make course | test | lab | record | notebooks | kernels-check | clean"

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip $(QUIET)
	$(PY) -m pip install -q -r requirements.txt $(QUIET)
	$(PY) -m pip install -q --no-deps -e . $(QUIET)
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (tensor-core course)" >/dev/null
	touch $(STAMP)

course: $(STAMP)
	$(PY) tools/execute_notebooks.py --out build

test: unit nbval

unit: $(STAMP)
	$(PY) -m pytest tests -q

nbval: $(STAMP)
	$(PY) -m pytest $(NBVAL) notebooks -q -p no:cacheprovider

lab: $(STAMP)
	$(VENV)/bin/jupyter lab notebooks/

# GPU only: measure every kernel and cuBLAS baseline, write results/<gpu>.json
record: $(STAMP)
	$(PY) -m helpers.record

# Authors: rebuild notebooks from tools/lessons/*.py and store CPU-backend outputs in them
notebooks: $(STAMP)
	for f in tools/lessons/[0-9][0-9]_*.py; do $(PY) $$f || exit 1; done
	COURSE_DEVICE=cpu $(PY) tools/execute_notebooks.py --inplace

# Compile every kernels/*.cu for sm_80 and sm_90 (no GPU needed; skips without nvcc)
kernels-check:
	bash tools/check_kernels.sh

clean:
	rm -rf build .pytest_cache
