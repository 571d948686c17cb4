# Two commands set up everything on a fresh Debian machine:
#   make run    install what is missing, migrate, serve the dashboard on 127.0.0.1:8000
#   make test   the same installs, then the whole test suite (make test-fast: the fast tier)
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CHROMIUM := $(or $(TABWRIGHT_CHROMIUM_PATH),/usr/bin/chromium)
HEADLESS_SHELL := /usr/lib/chromium/chromium-headless-shell
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
HOST ?= 127.0.0.1
PORT ?= 8000
DEBUG ?= 1

.PHONY: run test test-fast test-postgres install chromium servers migrate lint format bench

# Python's compiled files are written even where PYTHONDONTWRITEBYTECODE says not to (the
# .gitignore covers them): else each process of a test run compiles every module again,
# and pytest rewrites every test module's asserts again in each worker (about 4 s of CPU
# each; the fast tier's processes write them, the slow tier's read them), and each start
# of the dashboard compiles Django again.
export PYTHONDONTWRITEBYTECODE :=

# DEBUG=1 serves /demo/; runs may open that origin's /demo/ pages and no other private page.
run: install chromium migrate
	@$(BIN)/python manage.py tabwright_init
	@echo "Dashboard: http://$(HOST):$(PORT)/  (demo pages at /demo/ with DEBUG=1)"
	TABWRIGHT_DEBUG=$(DEBUG) TABWRIGHT_DEMO_ORIGIN=$${TABWRIGHT_DEMO_ORIGIN:-http://$(HOST):$(PORT)} \
	  $(BIN)/daphne -b $(HOST) -p $(PORT) dashboard.asgi:application

# make test runs the whole suite in one pytest run on TEST_JOBS processes (pytest-xdist),
# two a core and one more (a test that reaches a browser or a server spends most of its
# time waiting on Chromium, servers and its own deadlines, not computing), each test file
# whole in one (its servers and browsers are per file): the end-to-end files first, then
# the long ones, the fast tier last (tests/conftest.py), so the many short files fill the
# processes around the long ones and no long one runs alone at the end.  A test of the
# fast tier (one that reaches no browser and no server: tests/tiers.py decides from what
# each test uses) fails if it starts one, in any run.  TEST_JOBS=0 runs it in this
# process.  Measured on two quiet cores, from a fresh clone: 11 min with three processes,
# 9.5 with five, 10 with seven (25 min in one); 8.5 with five once the slow tier read the
# compiled test modules; the fast and the slow tier as two runs one after the other, 518 s
# (28 s + 477 s and the install); one run of both, 454 s (one collection, and the fast
# tier's tests fill the cores the slow tier's waits leave free).  With 2,561 tests, 676
# to 717 s of tests (11.5 to 12 min with the install); Chromium takes about half the CPU.
# make test-fast: the fast tier alone, the inner loop (under a minute), on FAST_JOBS.
TEST_JOBS ?= $(shell echo $$(( 2 * $$(nproc) + 1 )))
FAST_JOBS ?= 2
PYTEST := $(BIN)/python -m pytest
XDIST_FAST = $(if $(filter-out 0,$(FAST_JOBS)),-n $(FAST_JOBS) --dist load)
XDIST_ALL = $(if $(filter-out 0,$(TEST_JOBS)),-n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder)

test: install chromium servers
	$(PYTEST) $(XDIST_ALL)

test-fast: install
	$(PYTEST) --tier fast $(XDIST_FAST)

# make test-postgres: the dashboard's tests of the fast tier on a PostgreSQL of their own
# (tests/on_postgres.py), where a scaled-out deployment keeps its data: SQLite's in-memory
# test database hides what only a database server does (32-bit integers, a close that
# closes).  About three minutes on two processes, so not part of make test (its
# end-to-end files already run the dashboard on PostgreSQL); PG_TESTS picks others, e.g.
# PG_TESTS=tests/dashboard/jobs/test_outbox.py.
PG_TESTS ?= tests/dashboard --tier fast
test-postgres: install servers
	$(BIN)/python -m tests.on_postgres $(PYTEST) $(PG_TESTS) $(XDIST_FAST)

install: $(STAMP)

# uv installs what pip would, its downloads in parallel: on a fresh clone ~20 s where pip
# takes 40 s to 2 min (and 30 s of CPU).  pip installs it (a few seconds), and pip does the
# whole install where uv can't be had or can't reach the index (a mirror set in pip.conf).
# The modules are compiled at install, on every core (else the first test processes each
# compile what they import, at once: more CPU in all).
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -q --disable-pip-version-check 'uv>=0.9,<1' 2>/dev/null \
	  && $(BIN)/uv pip install -q --compile-bytecode --python $(BIN)/python -e '.[dev]' \
	  || $(BIN)/python -m pip install -q --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

# Debian's Chromium and its headless shell (what a headless browser launches: lighter),
# unless a browser is reached by CDP URL or they are already there.
chromium:
	@if [ -n "$$TABWRIGHT_CDP_URL" ] || { [ -x "$(CHROMIUM)" ] && [ -x "$(HEADLESS_SHELL)" ]; }; then :; else \
	  echo "Installing Chromium from Debian's packages…"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium chromium-headless-shell >/dev/null; \
	fi

# Debian's Redis and PostgreSQL, which the tests start on loopback ports of their own (and a
# scaled-out deployment uses: docs/deploying.md "Scaling out").
servers:
	@missing=""; \
	[ -x /usr/bin/redis-server ] || missing="$$missing redis-server"; \
	ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || missing="$$missing postgresql"; \
	if [ -n "$$missing" ]; then \
	  echo "Installing$$missing from Debian's packages…"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null; \
	fi

migrate: install
	@$(BIN)/python manage.py migrate --noinput -v 0

lint: install
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

format: install
	$(BIN)/ruff check --fix . && $(BIN)/ruff format .
