# The two commands of the README:
#   make demo   -- set up (venv, torch 2.13.0 CPU, the package) and run the main job
#   make test   -- set up, lint (ruff), type-check the package (mypy) and run the whole test suite
# Setup is idempotent: a stamp file is rebuilt only when pyproject.toml changes.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.monoidlab-installed

.PHONY: setup demo test bench clean

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

# mypy checks what [tool.mypy] in pyproject.toml names: the package
test: setup
	$(BIN)/ruff check monoidlab tests bench
	$(BIN)/python -m mypy
	$(BIN)/python -m pytest tests

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache
