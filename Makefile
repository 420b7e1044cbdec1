# Entry points, each self-contained on a fresh machine:
#   make reproduce   offline reproduction of all five papers' notebooks -> figures/ and runs/
#   make test        lint + the whole test suite
#   make test-fast   lint + the fast tier for the edit-test loop: no notebook execution, model build or browser
#   make test-busy   the JupyterLab browser tests while other processes keep every core busy
#   make lab         JupyterLab on notebooks/ with the package's environment as its Python kernel
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
# torch is pinned to the release known to work with this package; pip picks the CPU or CUDA wheel.
TORCH_PINS ?= torch==2.14.1 torchvision==0.29.1
# pip's default torch wheel on x86-64 Linux is the CUDA build; TORCH_INDEX=https://download.pytorch.org/whl/cpu
# installs the CPU-only build on a machine without a GPU
TORCH_INDEX ?=
STAMP := $(VENV)/.installed

.PHONY: reproduce test test-fast test-busy install lint lab clean-venv

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) $(TORCH_PINS)
	$(BIN)/python -m pip install --quiet -e '.[all]'
	@touch $(STAMP)

install: $(STAMP)

# the notebooks, then the example report card (a released Ref-Adv run replayed) and the example comparison (the
# released Ref-Adv runs on their common rows); each skipped with the command that fetches the runs (exit 3) when
# the released Ref-Adv runs are neither fetched nor beside the checkout
reproduce: $(STAMP)
	$(BIN)/vlamb-nb reproduce --update-figures
	@$(BIN)/vlamb-nb card --example --update-figures > /dev/null; rc=$$?; \
	  if [ $$rc -eq 3 ]; then echo "example report card skipped: it needs the released Ref-Adv runs (vlamb-nb data fetch refadv)"; \
	  elif [ $$rc -ne 0 ]; then exit $$rc; else echo "figures/card/report_card.png refreshed"; fi
	@$(BIN)/vlamb-nb compare --example --update-figures > /dev/null; rc=$$?; \
	  if [ $$rc -eq 3 ]; then echo "example comparison skipped: it needs the released Ref-Adv runs (vlamb-nb data fetch refadv)"; \
	  elif [ $$rc -ne 0 ]; then exit $$rc; else echo "figures/compare/refadv_released_runs.png refreshed"; fi

# the venv's own ipykernel is the notebooks' "python3" kernel; ipywidgets 8 needs no extension step. As root it
# adds --allow-root, with no display it opens no browser, and it prints the URL with its token (and the ssh tunnel
# from a laptop on a remote node); PORT=N picks the port
lab: $(STAMP)
	$(BIN)/vlamb-nb lab $(if $(PORT),--port $(PORT))

lint: $(STAMP)
	$(BIN)/ruff check vlamb_nb tests perf scripts

# pytest-xdist workers: the tests not marked slow share nothing, so they run on every core; the slow ones run a
# test file per worker (--dist loadfile), each notebook configuration executed once per worker and the whole
# offline reproduction once per make test, kept in $(KEPT) for every worker (tests/fixtures_notebooks.py)
PYTEST_WORKERS ?= auto

# the whole suite; the JupyterLab browser tests run last, BROWSER_WORKERS at a time, with every core kept busy by
# other processes (a researcher's laptop is rarely idle), so a green run shows they hold on a busy machine: first by
# the new user's path (a fresh clone with nothing beside it: make reproduce and the README's offline examples), then,
# if they outlast it, by busy loops for BROWSER_BUSY_FOR more seconds (the rest run on what is left). Each
# tier prints its slowest tests (--durations), so a slower suite shows where
# the slow tier's whole offline reproduction is kept in $(KEPT) for its workers and the browser tests, which read
# its pages instead of executing every notebook again (tests/fixtures_notebooks.py); each make test starts it empty
KEPT := .test-reproductions
BROWSER_BUSY_FOR ?= 60
# the browser tests run this many at a time, each worker with its own JupyterLab and Chromium (two keep both cores
# of a laptop busy beside the fresh clone; more would only share them)
BROWSER_WORKERS ?= 2
# the suite starts hundreds of Python processes (pytest workers, notebook kernels, the command line): each reads
# the package's compiled bytecode and pytest's rewritten test modules from __pycache__ (git ignores it) instead of
# compiling them again, even where the environment turns bytecode off (perf/bench_bytecode.py times it)
test test-fast test-busy: export PYTHONDONTWRITEBYTECODE =
test: $(STAMP)
	$(BIN)/ruff check vlamb_nb tests perf scripts
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) -m "not slow" --ignore=tests/test_browser.py --durations=10
	rm -rf $(KEPT)
	VLAMB_TEST_REPRODUCTIONS=$(CURDIR)/$(KEPT) $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile \
		-m slow --ignore=tests/test_browser.py --durations=10
	VLAMB_TEST_REPRODUCTIONS=$(CURDIR)/$(KEPT) $(BIN)/python scripts/busy.py --for $(BROWSER_BUSY_FOR) \
		--load "$(BIN)/python scripts/fresh_clone.py --venv $(VENV)" -- $(BIN)/python -m pytest -q \
		-n $(BROWSER_WORKERS) tests/test_browser.py --durations=10

# the tests not marked slow (notebook executions, model builds) or browser, on every core; perf/bench_tests.py
# times it
test-fast: $(STAMP)
	$(BIN)/ruff check vlamb_nb tests perf scripts
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) -m "not slow and not browser" --ignore=tests/test_browser.py

# BUSY_PROCS busy loops (default: one per core) for the whole run, or only its first BUSY_FOR seconds
test-busy: $(STAMP)
	$(BIN)/python scripts/busy.py $(if $(BUSY_PROCS),--procs $(BUSY_PROCS)) $(if $(BUSY_FOR),--for $(BUSY_FOR)) \
		-- $(BIN)/python -m pytest -q tests/test_browser.py

clean-venv:
	rm -rf $(VENV)
