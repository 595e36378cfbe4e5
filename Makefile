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

.PHONY: course test unit nbval lab lab-screenshots lab-test tried record gpu-check notebooks kernels-check clean help

help:
	@echo "make course | test (= unit + nbval) | unit | nbval | lab | lab-screenshots | lab-test | tried | record | gpu-check | sanitize | determinism | notebooks | kernels-check | slides | slides-test | slides-pdf | clean"

# GPU targets run with the course's .venv, unless a Python is given on the command line (make gpu-check
# PY=python3): then no .venv is made, so they work offline with a Python that has CuPy already.
VENV_UNLESS_PY := $(if $(filter command line,$(origin PY)),,$(STAMP))

PY_TOO_OLD = 'import sys; sys.exit(sys.version_info < (3, 11))'
# .venv is made once, with $(PYTHON), which must be 3.11 or newer; a .venv whose Python does not run or is older
# is not repaired in place (venv cannot change its interpreter): the message says to remove it.
$(STAMP): requirements.txt pyproject.toml
	@if [ -e $(VENV)/pyvenv.cfg ]; then \
	  $(PY) -c $(PY_TOO_OLD) 2>/dev/null || { echo "$(VENV)'s Python does not run or is older than 3.11" \
	    "($$($(PY) -V 2>&1 || true)): remove it (rm -rf $(VENV)) and run make again"; exit 1; }; \
	else \
	  command -v $(PYTHON) >/dev/null || { echo "No $(PYTHON) on this machine: install Python 3.11 or newer," \
	    "or name the one you have: make $(or $(MAKECMDGOALS),help) PYTHON=/path/to/python3"; exit 1; }; \
	  $(PYTHON) -c $(PY_TOO_OLD) || { echo "The course needs Python 3.11 or newer; $(PYTHON) is" \
	    "$$($(PYTHON) -V 2>&1). Name a newer one: make $(or $(MAKECMDGOALS),help) PYTHON=python3.12"; exit 1; }; \
	  $(PYTHON) -m venv $(VENV); \
	fi
	$(PY) -m pip install -q --upgrade pip $(QUIET)
	$(PY) -m pip install -q -r requirements.txt $(QUIET)
	$(PY) -m pip install -q --no-deps -e . $(QUIET)
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (tensor-core course)" >/dev/null
	touch $(STAMP)

# the HTML pages take MathJax and RequireJS from tools/slides/node_modules (npm ci) when npm exists, so they
# load nothing remote; without npm they fall back to a CDN and say so
SLIDES_NPM := tools/slides/node_modules/.package-lock.json
PAGE_ASSETS := $(if $(shell command -v npm 2>/dev/null),$(SLIDES_NPM))

# The executed notebooks go to build/notebooks/, then tools/slides.py --site writes every page of build/html/ and its
# index from them. COURSE_EXECUTED=DIR takes the notebooks as executed already in DIR instead of executing them again:
# CI passes the first run of make determinism (DETERMINISM_ARGS="--keep DIR"), whose compared outputs equal the
# committed ones.
course: $(STAMP) $(PAGE_ASSETS)
	$(PY) tools/execute_notebooks.py --out build --no-html $(if $(COURSE_EXECUTED),--executed $(COURSE_EXECUTED))
	$(PY) tools/slides.py --site

test: unit nbval

# The unit tests on the CPU backend. They do not collect tests/gpu (GPU only: COURSE_DEVICE=gpu pytest tests/gpu)
# and take a sample of each sweep (one case of each kind); `pytest tests --full -m sweep` runs every case of the
# sweeps (every kernel and rung of the check's mutation matrices, every knob value built with nvcc): make
# gpu-check's tests stage runs both. No bytecode caches (PYTHONDONTWRITEBYTECODE, for the notebooks' kernels too),
# hypothesis's files in a temporary folder and the wheel built from a copy (tests/conftest.py): a test run leaves
# the work tree as it found it (git status --ignored is the same before and after).
unit: $(STAMP)
	PYTHONDONTWRITEBYTECODE=1 $(PY) -m pytest tests -q

nbval: $(STAMP)
	PYTHONDONTWRITEBYTECODE=1 $(PY) -m pytest $(NBVAL) notebooks -q -p no:cacheprovider

# The lab (lab/README.md): the research behind the lessons, outside the course's package. Its tests, and the
# summary files the lessons read (results/tried.json for the "What else was tried" tables, results/limits.json for
# what the counters say limits a goal still missed), written from the lab's logs.
lab-test: $(STAMP)
	PYTHONDONTWRITEBYTECODE=1 $(PY) -m pytest lab/tests -q -p no:cacheprovider

tried: $(STAMP)
	$(PY) lab/tried.py
	$(PY) lab/limits.py

# JupyterLab on notebooks/ with the course's settings (tools/jupyter/: the file browser lists the lessons' notebooks,
# not their .py halves nor the slides' style sheets; SHOW_ALL=1 lists everything). The lessons are signed for this
# user first (jupyter trust), so a fresh clone's notebooks open trusted. As root (containers, cloud machines)
# JupyterLab refuses to start without --allow-root: given here.
LAB_CONFIG := $(if $(SHOW_ALL),,JUPYTER_CONFIG_PATH="$(CURDIR)/tools/jupyter$(if $(JUPYTER_CONFIG_PATH),:$(JUPYTER_CONFIG_PATH))")
lab: $(STAMP)
	$(VENV)/bin/jupyter trust notebooks/[0-9][0-9]_*.ipynb >/dev/null
	$(LAB_CONFIG) $(VENV)/bin/jupyter lab notebooks/ $(if $(filter 0,$(shell id -u)),--allow-root)

# JupyterLab in headless Chromium on the CPU backend (tests/lab_browser/): the file browser, trust, and lesson 05's
# kernel listing, diff, try_kernel with a learner's value and a course error, checked in the page, screenshots in
# build/screenshots/lab/. Without node or Chromium it says so and passes.
lab-screenshots: $(STAMP)
	@if ! command -v node >/dev/null || [ ! -x "$${CHROMIUM:-/usr/bin/chromium}" ]; then \
		echo "lab-screenshots: skipped: needs node and Chromium (apt-get install nodejs npm chromium)"; \
	else $(MAKE) --no-print-directory $(SLIDES_NPM) && node --test tests/lab_browser/; fi

# GPU only: measure every kernel and cuBLAS baseline, write results/<gpu>.json
record: $(VENV_UNLESS_PY)
	$(PY) -m helpers.record

# GPU only (README "Checking on a GPU"): record, GPU tests, nbval with the GPU backend, compute-sanitizer,
# Nsight Compute counters, compiler dumps; each stage goes on after a failed one; everything in results/.
# STAGES="tests nbval" runs some stages only; tools/gpu_check.sh lists the other settings.
gpu-check: $(VENV_UNLESS_PY)
	PY="$(PY)" STAGES="$(STAGES)" NBVAL="$(NBVAL)" bash tools/gpu_check.sh

# Authors (README "Writing a lesson"): a lesson is a jupytext pair, notebooks/NN_topic.py (py:percent text)
# and notebooks/NN_topic.ipynb (notebooks/jupytext.toml). Sync every pair (the newer side is the source; a
# new text file gets its notebook), put the Colab setup cell and link in every lesson and the README
# (tools/colab.py, from pyproject.toml's [project.urls]), then store the CPU backend's outputs.
LESSON_STEMS = $(sort $(basename $(wildcard notebooks/[0-9][0-9]_*.py notebooks/[0-9][0-9]_*.ipynb)))
notebooks: $(STAMP)
	$(VENV)/bin/jupytext --quiet --sync $(foreach s,$(LESSON_STEMS),$(firstword $(wildcard $(s).py $(s).ipynb)))
	$(PY) tools/colab.py
	COURSE_DEVICE=cpu $(PY) tools/execute_notebooks.py --inplace

# Compile every kernels/*.cu for sm_80 and sm_90 (no GPU needed; skips without nvcc)
kernels-check:
	bash tools/check_kernels.sh

clean:
	rm -rf build .pytest_cache

# Slides (README "Slides and HTML"): one offline reveal.js deck per notebook in build/slides/, from
# the executed notebooks in build/notebooks/ (executed first if missing or older than notebooks/).
# reveal.js 4, MathJax 2, RequireJS, jQuery and playwright-core come from tools/slides/package-lock.json;
# Chromium (browser test, PDFs) from Debian (apt-get install chromium).
$(SLIDES_NPM): tools/slides/package.json tools/slides/package-lock.json
	npm ci --prefix tools/slides --no-audit --no-fund --loglevel=error
	touch $(SLIDES_NPM)

slides: $(STAMP) $(SLIDES_NPM)
	$(PY) tools/slides.py

# headless Chromium opens the title and a middle slide of every deck (screenshots in build/screenshots/)
slides-test: slides
	node --test tests/browser/

# optional: PDF handouts through each deck's ?print-pdf view, printed by the same Chromium
slides-pdf: slides
	node tools/slides/print_pdf.mjs
	$(PY) tools/slides.py --index-only

.PHONY: slides slides-test slides-pdf

# Reliability: Restart & Run All four times on the CPU backend, each run on another machine as numpy sees it:
# OpenBLAS's Haswell (AVX2) kernels with numpy's AVX-512 loops off, its Prescott (SSE) kernels with AVX2 off too,
# its SkylakeX (AVX-512) kernels, and one BLAS thread. Every compared output must be identical in every run and
# equal to the committed one; a setting this CPU cannot run is skipped with a line. DETERMINISM_SETTINGS overrides
# the list; DETERMINISM_ARGS adds options of tools/check_determinism.py (CI: --nbval-ran, so that make test's nbval
# run, as this machine is, stands for a setting that leaves the machine as it is; --keep DIR for make course).
NPY_NO_V4 := X86_V4 AVX512_ICL AVX512_SPR
DETERMINISM_SETTINGS ?= "OPENBLAS_CORETYPE=Haswell,NPY_DISABLE_CPU_FEATURES=$(NPY_NO_V4)" \
	"OPENBLAS_CORETYPE=Prescott,NPY_DISABLE_CPU_FEATURES=X86_V3 $(NPY_NO_V4)" \
	"OPENBLAS_CORETYPE=SkylakeX" "OPENBLAS_NUM_THREADS=1"
determinism: $(STAMP)
	$(PY) tools/check_determinism.py --runs 4 --jobs 2 --settings $(DETERMINISM_SETTINGS) $(DETERMINISM_ARGS)

# GPU only: every kernel under compute-sanitizer memcheck, racecheck and synccheck at small and odd
# sizes; writes results/sanitize-<gpu>.txt (SANITIZE_PY=... CS=/path/to/compute-sanitizer to override)
sanitize:
	bash tools/sanitize.sh

.PHONY: determinism sanitize
