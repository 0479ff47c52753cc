# The two commands a user needs: `make train` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: train test lint format bench docs docs-check notebooks clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	touch $(STAMP)

# The dev extra without pip's byte-compilation of every installed module (about 21,000
# files: 70 of its 134 s on the 2-core machine): `make test` and `make train` write the
# bytecode of the modules they import, as they import them (PYTHONDONTWRITEBYTECODE
# cleared), so that the next process reads it.
$(DEV_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --no-compile -e ".[dev]"
	touch $(DEV_STAMP) $(STAMP)

train: $(STAMP)
	PYTHONDONTWRITEBYTECODE= $(PY) -m jaxrl.train --agent dqn --env CartPole

# The type check reads [tool.mypy] in pyproject.toml (its level, and what it leaves out).
lint: $(DEV_STAMP)
	$(PY) -m ruff check jaxrl tests benchmarks scripts
	$(PY) -m ruff format --check jaxrl tests benchmarks scripts
	$(PY) -m mypy jaxrl

format: $(DEV_STAMP)
	$(PY) -m ruff format jaxrl tests benchmarks scripts
	$(PY) -m ruff check --fix jaxrl tests benchmarks scripts

# Two workers, one test file each at a time (module fixtures stay within a worker): on the
# 2-core CI machine most of the suite is single-threaded compilation. Files are handed out
# in collection order, the heaviest first (tests/conftest.py), so both workers end
# together. The 15 slowest tests are listed at the end, for the suite's budget (15 minutes
# there).
test: lint
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -n 2 --dist loadfile --no-loadscope-reorder --durations=15

# The documentation site, warnings as errors (tests/test_docs.py builds it too), into site/.
docs: $(DEV_STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

# The site in a real browser: builds it, serves it on 127.0.0.1, and with headless Chromium
# (Debian's chromium package; CI has none, so `make test` does not run this) saves
# screenshots of the home page, an algorithm page and a search into
# docs/assets/screenshots/, and checks that the search finds the Rainbow page.
docs-check: $(DEV_STAMP)
	$(PY) scripts/docs_check.py

# Executes the notebooks and saves them with their outputs, which the site shows.
notebooks: $(DEV_STAMP)
	$(PY) scripts/run_notebooks.py

bench: $(STAMP)
	$(PY) benchmarks/dqn_cartpole.py

clean:
	rm -rf $(VENV) runs site .pytest_cache .ruff_cache .mypy_cache
