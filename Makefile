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

.PHONY: run serve install install-test system-deps services services-stop test test-sqlite test-postgres \
	test-postgres-ready bench fuzz lint clean demo docs docs-serve

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

## make run: install, migrate, load the demo collection and accounts, serve on 127.0.0.1:8000 (PORT=…) beside a
## task worker and loopback fakes of an OpenAI-compatible server and of MTurk where none of yours is set (FAKES=0)
run: install
	HOST=$(HOST) PORT=$(PORT) TMP=$(TMP) VENV=$(VENV) FAKES=$(FAKES) bash scripts/run.sh

## make serve: the production shape on one machine: PostgreSQL, Redis, gunicorn, task workers (TASK_WORKERS=2),
## DEBUG off, static files by WhiteNoise, `check --deploy` clean (behind a TLS proxy; SERVE_HTTP=1 without one)
serve: install system-deps
	HOST=$(HOST) PORT=$(PORT) PG_PORT=$(PG_PORT) REDIS_PORT=$(REDIS_PORT) TMP=$(TMP) bash scripts/serve.sh

## system packages the tests use: PostgreSQL, Redis, Chromium (Debian packages, installed when missing)
system-deps:
	@bash scripts/system-deps.sh

services: system-deps
	@bash scripts/services.sh start $(TMP) $(PG_PORT) $(REDIS_PORT)

services-stop:
	@bash scripts/services.sh stop $(TMP) $(PG_PORT) $(REDIS_PORT)

## make test: lint, types, migrations and the docs build, then the tests: on SQLite all but the browser
## tests, then on a PostgreSQL cluster owned by the test run every test that reaches the database (the
## browser tests too).
## A test that never reaches the database cannot differ between the two, so it runs once (on SQLite).
## Without PostgreSQL it fails and says why.
test: install-test services
	@status=0; \
	{ $(MAKE) --no-print-directory test-postgres-ready && \
	  $(BIN)/ruff check . && \
	  $(BIN)/ruff format --check . && \
	  DEBUG=1 $(BIN)/mypy && \
	  $(BIN)/lint-imports --no-cache && \
	  DEBUG=1 $(PY) manage.py makemigrations --check --dry-run && \
	  $(MAKE) --no-print-directory docs && \
	  $(MAKE) --no-print-directory test-sqlite PYTEST_SELECT="not browser" && \
	  $(MAKE) --no-print-directory test-postgres PYTEST_SELECT="database"; } || status=$$?; \
	bash scripts/services.sh stop $(TMP) $(PG_PORT) $(REDIS_PORT); \
	exit $$status

# Tests run in TEST_WORKERS processes (pytest-xdist; 0: in this one). Each worker has its own test
# database; tests that bind ports take free ones. The test databases are built from the models, not by
# replaying every migration in every worker: tests/annotation/test_migrations.py runs the migrations from
# zero, and makemigrations --check above keeps models and migrations equal. PYTEST_SELECT is a -m
# expression (the marks are listed in pyproject.toml).
TEST_WORKERS ?= 2
PYTEST_SELECT ?=
PYTEST := $(BIN)/pytest -p no:cacheprovider --nomigrations -n $(TEST_WORKERS) --dist loadgroup \
	$(if $(PYTEST_SELECT),-m "$(PYTEST_SELECT)")

test-sqlite: install-test
	env -u DATABASE_URL REDIS_TEST_URL=redis://127.0.0.1:$(REDIS_PORT)/0 $(PYTEST) $(PYTEST_ARGS)

# Production runs on PostgreSQL: a run that cannot reach it fails (it never passes by skipping that pass).
test-postgres-ready:
	@[ -f $(TMP)/pg.ok ] || { echo "PostgreSQL is not running on 127.0.0.1:$(PG_PORT) (make services starts" \
	  "it; see above and $(TMP)/pg.log): the tests cannot run on PostgreSQL, so make test fails" >&2; exit 1; }

test-postgres: install-test test-postgres-ready
	DATABASE_URL=postgres://assay@127.0.0.1:$(PG_PORT)/assay REDIS_TEST_URL=redis://127.0.0.1:$(REDIS_PORT)/0 \
	  $(PYTEST) $(PYTEST_ARGS)

## make bench: every benchmark; bench_assessors runs against the PostgreSQL cluster `services` starts
bench: install-test services
	@status=0; \
	for b in bench/bench_*.py; do echo "== $$b"; PG_PORT=$(PG_PORT) SECRET_KEY=$${SECRET_KEY:-assay-bench-only-not-secret-0123456789abcdefghijklmnopqrstuvwxyz} $(PY) $$b || { status=$$?; break; }; done; \
	bash scripts/services.sh stop $(TMP) $(PG_PORT) $(REDIS_PORT); \
	exit $$status

## make fuzz: the fuzz tests (tests/fuzz: schemathesis on the API, hypothesis on the forms and crowd pages)
## with FUZZ_EXAMPLES fresh examples per operation and form instead of the suite's few fixed ones
FUZZ_EXAMPLES ?= 100
fuzz: install-test
	env -u DATABASE_URL FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/pytest -p no:cacheprovider tests/fuzz $(PYTEST_ARGS)

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

clean:
	rm -rf $(VENV) $(TMP) db.sqlite3 db.sqlite3-*
