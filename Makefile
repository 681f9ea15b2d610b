# The course's everyday commands. `make help` lists them.
#
#   make lab    open the course in JupyterLab
#   make test   run every test: the tests/ suite and the notebooks' stored outputs (nbval)
#   make test-quick   the tests/ suite without notebooks or Spark: the quick loop
#
# The first run creates .venv and installs kafkalab with all its extras; later runs reinstall
# only when pyproject.toml has changed since the last install.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
LAB_OVERRIDES := $(VENV)/share/jupyter/lab/settings/overrides.json
LAB_NOTEBOOK ?= notebooks/01-start-here.ipynb
LAB_PORT ?= 8888
PYTEST_ARGS ?=
# make test runs every test. PYTEST_MARKS chooses by marker (pyproject.toml): notebooks (runs a
# notebook in a kernel), spark (starts Spark). The hostile hand-ins are graded for 08-idempotence;
# make test-hostile grades every assignment's (an hour: tests/test_grading_hostile.py --hostile).
PYTEST_MARKS ?=
# pytest-xdist workers for make test: one per core (auto). Each notebook and each test file
# stays on one worker (--dist loadscope): a notebook's cells share one kernel and run in order,
# a module's fixtures are built once. The longest scopes go first (tests/conftest.py orders them
# by tests/scope_seconds.json; `make test PYTEST_ARGS=--record-scope-seconds` measures them
# again). TEST_JOBS=0 runs in one process.
TEST_JOBS ?= auto
QUICK_MARKS := not notebooks and not spark
BENCHMARKS := $(sort $(filter-out benchmarks/_%,$(wildcard benchmarks/*.py)))
SUBMISSIONS ?= submissions
ASSIGNMENT ?=
OUT ?= grades.csv

# JupyterLab refuses to start as root unless told that it is on purpose (containers, CI).
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)

# papermill and nbval start the "python3" kernel: prefer the venv's kernel over a user-wide one.
export JUPYTER_PREFER_ENV_PATH := 1

.DEFAULT_GOAL := help
.PHONY: help lab test test-quick test-hostile install compile pure lint bench notebooks exercises grade clean distclean datasets \
	datasets-small datasets-census

help:
	@echo "make lab        open the course in JupyterLab ($(LAB_NOTEBOOK))"
	@echo "make test       run the tests/ suite and compare the notebooks' stored outputs (about 10 min on 2 cores)"
	@echo "make test-quick the tests/ suite without notebooks or Spark: the quick loop"
	@echo "make test-hostile  grade every assignment's hostile hand-ins, not only 08's (about an hour)"
	@echo "make test PYTEST_MARKS='not spark'   choose tests by marker: notebooks, spark"
	@echo "make install    create $(VENV), install kafkalab with all extras, compile its core once"
	@echo "make compile    compile the simulator's core again with mypyc (after editing it)"
	@echo "make pure       remove the compiled core: the sources run"
	@echo "make lint       ruff check, ruff format --check and mypy (strict for protocol/sim/check)"
	@echo "make bench      run every benchmarks/*.py and print its figures"
	@echo "make notebooks  re-run every notebook and store its outputs (review the diff)"
	@echo "make exercises  regenerate exercises/ and solutions/ from exercises/source"
	@echo "make grade ASSIGNMENT=03-hw-leo SUBMISSIONS=dir OUT=grades.csv   grade a folder"
	@echo "make datasets-small  regenerate the shipped campaign datasets/small and its schema"
	@echo "make datasets-census regenerate the shipped census datasets/census (50,400 trials, about 11 min)"
	@echo "make datasets   complete the census, then generate the large campaign in datasets/large (on Spark)"
	@echo "make clean      remove caches and build leftovers (keeps $(VENV))"
	@echo "make distclean  clean, and remove $(VENV) too"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || { rm -rf $(VENV); exit 1; }

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -e ".[all]"
	touch $@

# The simulator's core is compiled with mypyc once (kafkalab/core_build.py); an edited source
# runs as a source until `make compile`, so the two never mix.
install: $(STAMP) $(LAB_OVERRIDES)
	@$(BIN)/python -m kafkalab.core_build --if-missing

# JupyterLab's settings for this environment: no "get notified about news" prompt and no update
# check over the first lesson.
$(LAB_OVERRIDES): kafkalab/lab-overrides.json | $(STAMP)
	install -D -m 644 $< $@

compile: $(STAMP)
	$(BIN)/python -m kafkalab.core_build

pure:
	@if [ -x $(BIN)/python ]; then $(BIN)/python -m kafkalab.core_build --clean; fi

lab: install
	$(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.port=$(LAB_PORT) $(ALLOW_ROOT) \
		--LabApp.news_url=None $(LAB_NOTEBOOK)

# Every pyplot figure the tests draw prints its overlapping labels (kafkalab/viz/labels.py), so a
# lesson picture with overlapping labels changes that lesson's output and fails its nbval test.
test: export MATPLOTLIBRC := $(CURDIR)/kafkalab/viz/label_check
# The test workers use every core already: a search forking more processes only competes with them.
test: export KAFKALAB_EXPLORE_WORKERS := 1
test: install
	$(BIN)/python -m pytest tests notebooks solutions --nbval --nbval-kernel-name python3 \
		--nbval-sanitize-with $(CURDIR)/tools/nbval_sanitize.cfg -m "$(PYTEST_MARKS)" \
		-n $(TEST_JOBS) --dist loadscope --no-loadscope-reorder $(PYTEST_ARGS)

test-quick: install
	$(BIN)/python -m pytest tests -m "$(QUICK_MARKS)" $(PYTEST_ARGS)

test-hostile: install
	$(BIN)/python -m pytest tests/test_grading_hostile.py --hostile all $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: install
	@if [ -z "$(BENCHMARKS)" ]; then echo "no benchmarks yet: add benchmarks/*.py"; fi
	@set -e; for f in $(BENCHMARKS); do echo "== $$f"; $(BIN)/python $$f; done

notebooks: install
	$(BIN)/python tools/execute_notebooks.py

exercises: install
	$(BIN)/kafkalab exercises build --no-bundles
	$(BIN)/python tools/execute_notebooks.py solutions/*.ipynb
	$(BIN)/kafkalab exercises build  # the notebooks are in sync now: this run writes the bundles in dist/

grade: install
	@if [ -z "$(ASSIGNMENT)" ]; then echo "usage: make grade ASSIGNMENT=03-hw-leo SUBMISSIONS=dir OUT=grades.csv"; exit 2; fi
	$(BIN)/kafkalab grade $(SUBMISSIONS) --assignment $(ASSIGNMENT) --out $(OUT)

datasets-small: install
	$(BIN)/python -m kafkalab.campaign.schema > datasets/schema.json.tmp
	mv datasets/schema.json.tmp datasets/schema.json
	rm -rf datasets/small  # from scratch: a resume would keep parts the old code wrote
	$(BIN)/kafkalab campaign run small --out datasets/small --no-progress

# The census (50,400 trials, the trials table only) ships in datasets/census: this resumes it
# (nothing to do when it is whole), then builds the large campaign with its events.
datasets: install
	$(BIN)/kafkalab campaign run census --out datasets/census
	$(BIN)/kafkalab campaign run large --out datasets/large

datasets-census: install
	rm -rf datasets/census  # from scratch: a resume would keep parts the old code wrote
	$(BIN)/kafkalab campaign run census --out datasets/census

clean:
	rm -rf .pytest_cache .ruff_cache .hypothesis build dist *.egg-info
	find . -path ./$(VENV) -prune -o -type d \
		\( -name __pycache__ -o -name .ipynb_checkpoints \) -print0 | xargs -0 rm -rf

distclean: clean pure
	rm -rf $(VENV)
