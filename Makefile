# Two commands do everything on a fresh machine:  make figures   and   make test
# Each creates the virtual environment (.venv) if missing and installs the project into it.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
PRESET ?= full
STAMP  := $(VENV)/.installed

# headless, quiet and reproducible wherever make drives the code
export MPLBACKEND := agg
export PYTHONHASHSEED := 0

.PHONY: install figures book test test-thorough test-fixtures lab browser bench lint clean-cache help

# `make lab`: JupyterLab on 127.0.0.1 with a token of its own (LAB_PORT=... LAB_TOKEN=... to choose them)
LAB_PORT  ?= 8888
ifndef LAB_TOKEN
LAB_TOKEN := $(shell od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
endif

help:
	@echo "make figures [PRESET=smoke|full]  regenerate every figure, its provenance and the claims ledger"
	@echo "make book                         the results as a static site (Jupyter Book 2): build/book/_build/html"
	@echo "make install                      create .venv and install the project into it (the others do it too)"
	@echo "make test                         every test, fast tier: ~7 min on 2 cores (unit, theory, probes, notebooks)"
	@echo "make test-thorough                the same tests at thorough settings (many examples, full presets): ~20 min"
	@echo "make test-fixtures                recompute the committed full-preset results the fast tier reads"
	@echo "make lab                          open the notebooks in JupyterLab with the project's kernel (prints the URL)"
	@echo "make browser                      install the headless Chromium the browser test drives (part of make test)"
	@echo "make bench                        run the benchmarks and record them in bench/results/"
	@echo "make lint                         ruff check, ruff format --check, notebooks stripped (part of make test)"
	@echo "make clean-cache                  delete .cache/ and build/: trained models, probe results, scratch figures"
	@echo "make help                         this list"

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev,hf,book]"
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (workbench)" >/dev/null
	@touch $(STAMP)

install: $(STAMP)

figures: $(STAMP)
	$(PY) scripts/make_figures.py --preset $(PRESET)

# `make book`: the scorecard, the executed notebooks (build/notebooks/) and every figure with its provenance and
# claims as a static site in build/book/_build/html (scripts/make_book.py; reads what `make figures` left). Jupyter Book
# 2 (the `book` extra, installed with the others) runs on the machine's Node.js >= 18 and npm.
book: $(STAMP)
	$(PY) scripts/make_book.py

# The suite at one tier (tests/tier.py), then every notebook executed by nbval under the smoke preset: pytest runs on
# both cores (pytest-xdist, one torch thread per worker, each test file on one worker so that its module fixtures
# run once) over one session cache, build/test-cache, which the
# notebooks then reuse; papermill writes copies of the notebooks with preset="smoke" injected into build/nbval, nbval
# runs them (figures into build/), and the last step fails if any identity those runs recorded fails. In the fast tier a
# test whose setup or call takes more than 30 s fails the run (tests/conftest.py names it).
# The browser test (tests/test_browser.py) drives Debian's headless Chromium through chromedriver: `make browser`
# installs both when missing (apt-get, as root or with sudo); where that is impossible the test skips and says why.
TEST_WORKERS ?= 2
TEST_CACHE   := $(CURDIR)/build/test-cache
define run_suite
	rm -rf $(TEST_CACHE) build/nbval
	TQDM_DISABLE=1 OMP_NUM_THREADS=1 WORKBENCH_TEST_TIER=$(1) WORKBENCH_TEST_CACHE=$(TEST_CACHE) \
	  $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=30 tests
	$(PY) scripts/make_figures.py --preset smoke --prepare-only build/nbval
	TQDM_DISABLE=1 OMP_NUM_THREADS=1 WORKBENCH_STATIC=1 WORKBENCH_CACHE=$(TEST_CACHE) \
	  WORKBENCH_FIGURES=$(CURDIR)/build/nbval/figures \
	  $(PY) -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile --nbval-lax --nbval-current-env build/nbval
	$(PY) scripts/make_figures.py --preset smoke --collect-only --out build/nbval/figures
endef

test: lint browser
	$(call run_suite,fast)

test-thorough: lint browser
	$(call run_suite,thorough)

test-fixtures: $(STAMP)
	TQDM_DISABLE=1 $(PY) scripts/test_fixtures.py

lab: $(STAMP)
	@if [ -n "$$WORKBENCH_FIGURES" ] && [ "$$(realpath -m "$$WORKBENCH_FIGURES")" = "$(CURDIR)/figures" ]; then \
	  echo "make lab: WORKBENCH_FIGURES=$$WORKBENCH_FIGURES would let notebooks overwrite the committed figures/; unset it (figures go to build/explore/) or name another folder" >&2; \
	  exit 2; fi
	@echo ""
	@echo "  JupyterLab:  http://127.0.0.1:$(LAB_PORT)/lab?token=$(LAB_TOKEN)"
	@echo "  Stop it:     Ctrl-C in this terminal (twice), or: $(VENV)/bin/jupyter server stop $(LAB_PORT)"
	@echo ""
	@echo "  Figures you save go to build/explore/ (scratch); figures/ is written by make figures only."
	@echo ""
	OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} MKL_NUM_THREADS=$${MKL_NUM_THREADS:-1} PYTHONHASHSEED=0 \
	  $(VENV)/bin/jupyter lab --notebook-dir=notebooks --ServerApp.ip=127.0.0.1 --ServerApp.port=$(LAB_PORT) \
	  --ServerApp.port_retries=0 --IdentityProvider.token=$(LAB_TOKEN) $(if $(filter 0,$(shell id -u)),--allow-root)

browser:
	@bash scripts/install_browser.sh

bench: $(STAMP)
	$(PY) bench/run.py

# lint, formatting and stripped notebooks (the same checks as .pre-commit-config.yaml); the first step of `make test`
LINTED := analysis probes companions scripts bench tests
lint: $(STAMP)
	$(VENV)/bin/ruff check $(LINTED)
	$(VENV)/bin/ruff format --check $(LINTED)
	$(VENV)/bin/nbstripout --keep-id --verify notebooks/*.ipynb

clean-cache:
	rm -rf .cache build
