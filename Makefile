# Set-up and checks. `make demo` and `make test` each create .venv on first use.
PY ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
EXTRAS := atari,mujoco,box2d,ray,minatar,popgym,tune,docs,dev
# Two pytest workers match the CI machine's two cores; override with `make test JOBS=1`.
JOBS ?= 2

.PHONY: demo test lint docs docs-check unit learning test-paper test-gpu bench clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[$(EXTRAS)]"
	touch $(STAMP)

# Each `make demo` trains a new run (runs/demo/run_<k>) and plots every demo run so far.
DEMO_DIR ?= runs/demo

demo: $(STAMP)
	$(BIN)/rlpyt train --log-dir $(DEMO_DIR)
	$(BIN)/rlpyt plot $(DEMO_DIR) --out $(DEMO_DIR)/learning_curve.png  # prints where the picture is
	@echo "The rlpyt command is $(BIN)/rlpyt: run 'source $(BIN)/activate' to put it on your PATH."

lint: $(STAMP)
	$(BIN)/ruff check rlpyt tests examples bench docs_tools
	$(BIN)/lint-imports

# The documentation site (mkdocs.yml) into site/; --strict: broken links, missing API
# references and unlisted pages fail the build, so `make test` keeps the docs from rotting.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The built site checked (docs_tools/check_site.py): no broken internal link or missing
# image, hand-written pages of at most 400 lines, the results tables as
# docs_tools/results.py makes them (where it exists), API pages under a size limit, no
# duplicate titles or nav labels, the layout CSS present (a few seconds); with a headless
# Chromium on the PATH (e.g. apt-get install chromium-headless-shell) it also lays out
# every hand-written page, fails on overflowing tables, unloaded images and console
# errors, and writes each page's first screen to site-shots/ (about 40 s more).
docs-check: docs
	$(BIN)/python docs_tools/check_site.py site --shots site-shots

# Tests marked `paper` (a result checked against a published figure at the figure's own
# budget, minutes of CPU each) are left to `make test-paper` and `make learning`.
# --dist loadgroup hands tests out one at a time in collection order (the long ones
# first, tests/conftest.py), so both workers stay busy to the end; the default --dist
# load sends each worker a large first chunk, and one worker then ran every long test.
test: lint docs-check
	$(BIN)/python -m pytest -n $(JOBS) --dist loadgroup -m "not paper" --durations=30 tests

test-paper: $(STAMP)
	$(BIN)/python -m pytest -n $(JOBS) -m paper tests

# Every test marked `cuda` (one call on a machine with a GPU checks the CUDA paths).
test-gpu: $(STAMP)
	$(BIN)/python -m pytest -m cuda -rs tests

unit: $(STAMP)
	$(BIN)/python -m pytest -n $(JOBS) -m "not learning" tests

# Learning tests with their full seed plans (tests/helpers.py: seed_plan); make test runs
# the quick plans.
learning: $(STAMP)
	RLPYT_FULL_SEEDS=1 $(BIN)/python -m pytest -n $(JOBS) --dist loadgroup -m learning tests

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[bench]"

clean:
	rm -rf $(VENV) build site *.egg-info .pytest_cache .ruff_cache
