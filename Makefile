# The two commands of the README:
#   make demo   -- set up (venv, torch 2.13.0 CPU, the package) and run the main job
#   make test   -- set up, lint (ruff), type-check the package (mypy) and run the whole test suite
#                  (and, first, install Debian's chromium for the browser test and Debian's gap-core
#                  for the GAP oracle tests when they are missing and the machine allows it: see
#                  `browser` and `oracles`)
# Setup is idempotent: a stamp file is rebuilt only when pyproject.toml changes.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.monoidlab-installed

.PHONY: setup browser oracles demo test bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# torch first, CPU build, so that the project's `torch>=2.3` is already satisfied
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $(STAMP)

demo: setup
	$(BIN)/monoidlab demo

# The browser test (tests/test_report.py::test_report_renders_in_headless_chromium) opens the
# HTML report in headless Chromium. When no chromium is on PATH and this is root with apt-get
# (CI, containers), Debian's `chromium` is installed; otherwise nothing is installed and the
# test is skipped, saying why (pytest prints skip reasons). BROWSER=0 never installs.
BROWSER ?= 1
CHROMIUM := $(shell command -v chromium || command -v chromium-browser || command -v google-chrome)

browser:
ifneq ($(CHROMIUM),)
	@echo "browser: $(CHROMIUM) (the browser test runs)"
else ifeq ($(BROWSER),0)
	@echo "browser: no chromium and BROWSER=0: the browser test will be skipped"
else
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "browser: installing Debian's chromium (apt-get) for the browser test"; \
	  if (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	      --no-install-recommends chromium) >/tmp/monoidlab-apt-chromium.log 2>&1; then \
	    echo "browser: $$(command -v chromium) (the browser test runs)"; \
	  else echo "browser: apt-get install chromium failed (log: /tmp/monoidlab-apt-chromium.log):" \
	       "the browser test will be skipped"; fi; \
	else echo "browser: no chromium on PATH and no root apt-get to install it: the browser test" \
	  "will be skipped (install Debian's chromium to run it)"; fi
endif

# GAP (Debian's gap-core) is the second oracle of the monoid tests (tests/oracle.py,
# gap_monoid_facts), beside libsemigroups from the dev extra. As for the browser: installed
# when missing and this is root with apt-get (CI, containers), else its test is skipped saying
# why. GAP=0 never installs.
GAP ?= 1
GAPBIN := $(shell command -v gap)

oracles:
ifneq ($(GAPBIN),)
	@echo "oracles: $(GAPBIN) (the GAP oracle tests run)"
else ifeq ($(GAP),0)
	@echo "oracles: no gap and GAP=0: the GAP oracle tests will be skipped"
else
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "oracles: installing Debian's gap-core (apt-get) for the GAP oracle tests"; \
	  if (apt-get install -y -qq --no-install-recommends gap-core || (apt-get update -qq && \
	      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	      gap-core)) >/tmp/monoidlab-apt-gap.log 2>&1; then \
	    echo "oracles: $$(command -v gap) (the GAP oracle tests run)"; \
	  else echo "oracles: apt-get install gap-core failed (log: /tmp/monoidlab-apt-gap.log):" \
	       "the GAP oracle tests will be skipped"; fi; \
	else echo "oracles: no gap on PATH and no root apt-get to install it: the GAP oracle" \
	  "tests will be skipped (install Debian's gap-core to run them)"; fi
endif

# mypy checks what [tool.mypy] in pyproject.toml names: the package. The suite runs on every
# logical core (pytest-xdist), a test file to one worker so that its module fixtures are built
# once; tests/conftest.py runs the notebooks side by side, starts the longest files first and
# gives every process one torch/BLAS thread (one worker per core); `pytest tests` alone runs
# it in one process.
test: setup browser oracles
	$(BIN)/ruff check monoidlab tests bench tools
	$(BIN)/python -m mypy
	$(BIN)/python -m pytest -n logical --dist loadfile tests

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache
