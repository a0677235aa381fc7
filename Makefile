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

.PHONY: install figures test lab bench lint clean-cache help

help:
	@echo "make figures [PRESET=smoke|full]  regenerate every figure, its provenance and the claims ledger"
	@echo "make test                         run the whole test suite (unit, theory, probes, notebooks, figures)"
	@echo "make lab                          open the notebooks in JupyterLab with the project's kernel"
	@echo "make bench                        run the benchmarks and record them in bench/results/"
	@echo "make lint                         ruff check, ruff format --check, notebooks stripped (part of make test)"

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev,hf]"
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (workbench)" >/dev/null
	@touch $(STAMP)

install: $(STAMP)

figures: $(STAMP)
	$(PY) scripts/make_figures.py --preset $(PRESET)

# The suite, then every notebook executed by nbval under the smoke preset: papermill writes copies of
# the notebooks with preset="smoke" injected into build/nbval, nbval runs them (figures into build/),
# and the last step fails if any claim those runs recorded fails.
test: lint
	TQDM_DISABLE=1 $(PY) -m pytest -q tests
	rm -rf build/nbval
	$(PY) scripts/make_figures.py --preset smoke --prepare-only build/nbval
	TQDM_DISABLE=1 WORKBENCH_FIGURES=$(CURDIR)/build/nbval/figures \
	  $(PY) -m pytest -q -p no:cacheprovider --nbval-lax --nbval-current-env build/nbval
	$(PY) scripts/make_figures.py --preset smoke --collect-only --out build/nbval/figures

lab: $(STAMP)
	$(VENV)/bin/jupyter lab --notebook-dir=notebooks

bench: $(STAMP)
	$(PY) bench/run.py

# lint, formatting and stripped notebooks (the same checks as .pre-commit-config.yaml); the first step of `make test`
LINTED := analysis probes scripts bench tests
lint: $(STAMP)
	$(VENV)/bin/ruff check $(LINTED)
	$(VENV)/bin/ruff format --check $(LINTED)
	$(VENV)/bin/nbstripout --keep-id --verify notebooks/*.ipynb

clean-cache:
	rm -rf .cache build
