# The two commands of the README:
#   make demo   -- set up (venv, torch 2.13.0 CPU, the package) and run the main job
#   make test   -- set up, lint (ruff), type-check the package (mypy) and run the whole test suite
#                  (and, beside the setup, install Debian's chromium for the browser test and
#                  Debian's gap-core for the GAP oracle tests when they are missing and the
#                  machine allows it: see `system-tools`)
# Setup is idempotent: a stamp file is rebuilt only when pyproject.toml changes.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.monoidlab-installed

.PHONY: setup system-tools demo test bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# torch first, CPU build, so that the project's `torch>=2.3` is already satisfied
	$(BIN)/python -c "import torch" 2>/dev/null || \
	  $(BIN)/python -m pip install -q --no-compile torch==2.13.0
	$(BIN)/python -m pip install -q --no-compile -e ".[dev]"
	# the bytecode pip would write one file at a time, on every core (on 2 cores: 42 s instead
	# of 56 s for both installs); files that do not compile are skipped, as pip skips them
	$(BIN)/python -m compileall -qq -j 0 $(VENV)/lib || true
	touch $(STAMP)

demo: setup
	$(BIN)/monoidlab demo

# Two Debian packages that some tests use when they are there:
# - chromium: the browser test (tests/test_report.py::test_report_renders_in_headless_chromium)
#   opens the HTML report in headless Chromium;
# - gap-core: GAP, the second oracle of the monoid tests (tests/oracle.py, gap_monoid_facts),
#   beside libsemigroups from the dev extra.
# When one is missing and this is root with apt-get (CI, containers), `system-tools` installs the
# missing ones in one apt-get call; otherwise nothing is installed and those tests are skipped,
# saying why (pytest prints skip reasons). BROWSER=0 / GAP=0 never install that package.
BROWSER ?= 1
GAP ?= 1
CHROMIUM := $(shell command -v chromium || command -v chromium-browser || command -v google-chrome)
GAPBIN := $(shell command -v gap)
APT_WANT := $(if $(CHROMIUM),,$(if $(filter 0,$(BROWSER)),,chromium)) \
            $(if $(GAPBIN),,$(if $(filter 0,$(GAP)),,gap-core))
APT_LOG := /tmp/monoidlab-apt.log

system-tools:
ifneq ($(CHROMIUM),)
	@echo "browser: $(CHROMIUM) (the browser test runs)"
else ifeq ($(BROWSER),0)
	@echo "browser: no chromium and BROWSER=0: the browser test will be skipped"
endif
ifneq ($(GAPBIN),)
	@echo "oracles: $(GAPBIN) (the GAP oracle tests run)"
else ifeq ($(GAP),0)
	@echo "oracles: no gap and GAP=0: the GAP oracle tests will be skipped"
endif
ifneq ($(strip $(APT_WANT)),)
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "system-tools: installing Debian's $(strip $(APT_WANT)) (apt-get, log: $(APT_LOG))"; \
	  if (apt-get install -y -qq --no-install-recommends $(APT_WANT) || (apt-get update -qq && \
	      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	      $(APT_WANT))) >$(APT_LOG) 2>&1; then \
	    echo "system-tools: installed $(strip $(APT_WANT)) (the tests that need them run)"; \
	  else echo "system-tools: apt-get install $(strip $(APT_WANT)) failed (log: $(APT_LOG)):" \
	       "the tests that need them will be skipped"; fi; \
	else echo "system-tools: no root apt-get to install $(strip $(APT_WANT)): the tests that" \
	  "need them will be skipped (install Debian's chromium and gap-core to run them)"; fi
endif

# `make test`: the venv and the Debian packages side by side (pip and the bytecode compiler work
# the CPU, apt mostly the disk), then ruff and mypy (it checks what [tool.mypy] in pyproject.toml
# names: the package). The suite runs on every logical core (pytest-xdist), a test file to one
# worker so that its module fixtures are built once; tests/conftest.py runs the notebooks side
# by side, starts the longest files first and gives every process one torch/BLAS thread (one
# worker per core); `pytest tests` alone runs it in one process.
test:
	@$(MAKE) --no-print-directory -j2 setup system-tools
	$(BIN)/ruff check monoidlab tests bench tools
	$(BIN)/python -m mypy
	$(BIN)/python -m pytest -n logical --dist loadfile tests

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache
