# Mamma Mia! arena. `make help` lists the targets.
# Every target creates the virtual environment and installs on first use,
# so a fresh clone needs nothing but `make run` or `make test`.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PROTO  := protos/mammamia/v1/arena.proto
BENCH_OUT ?=

.DEFAULT_GOAL := help
.PHONY: help install kits proto run serve test lint typecheck bench clean

help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[1m%-10s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The Node.js bot's packages, from its lock file (what `mammamia conformance --client
# "node bots/node/bot.js ..."` runs); without npm its test is skipped.
NODE_STAMP := bots/node/node_modules/.installed
$(NODE_STAMP): bots/node/package-lock.json
	@if command -v npm >/dev/null; then \
	    npm ci --prefix bots/node --no-audit --no-fund --loglevel=error && touch $@; \
	else echo "npm not found: the Node.js bot's test will be skipped"; fi

# The Java kit's starter bot (kits/java), one runnable jar built by Maven from its pinned
# pom.xml (the stubs are generated from protos/ at build time); without java and mvn its
# test is skipped.
JAVA_KIT := kits/java/target/mammamia-bot.jar
$(JAVA_KIT): kits/java/pom.xml $(PROTO) $(shell find kits/java/src -name '*.java' 2>/dev/null)
	@if command -v mvn >/dev/null && command -v java >/dev/null; then \
	    mvn -B -q -f kits/java/pom.xml package; \
	else echo "java or mvn not found: the Java kit's test will be skipped"; fi

# The Go kit (kits/go/build.sh): stubs generated from protos/ by the plugins its go.mod
# pins, then kits/go/bin/starter; without `go` its test is skipped.
GO_STAMP := kits/go/bin/.built
$(GO_STAMP): $(STAMP) $(PROTO) kits/go/go.mod kits/go/go.sum kits/go/build.sh \
		$(wildcard kits/go/*.go kits/go/cmd/*/*.go)
	@if command -v go >/dev/null; then kits/go/build.sh && touch $@; \
	else echo "go not found: the Go kit's test will be skipped"; fi

# The Rust kit's starter bot (kits/rust), built by cargo from its lock file into
# kits/rust/target; without cargo its test is skipped.
RUST_STAMP := kits/rust/target/.built
$(RUST_STAMP): $(PROTO) $(wildcard kits/rust/Cargo.* kits/rust/build.rs kits/rust/src/*.rs kits/rust/src/*/*.rs)
	@if command -v cargo >/dev/null; then \
	    cargo build --locked --quiet --manifest-path kits/rust/Cargo.toml && touch $@; \
	else echo "cargo not found: the Rust kit's test will be skipped"; fi

# The three kits build at once, so that on a fresh machine one kit's downloads overlap
# another's compiling (each kit's output is printed whole when it is done).
kits: $(STAMP) ## Build the Go, Rust and Java kits (those whose toolchain is present)
	@$(MAKE) --no-print-directory -j3 --output-sync=target $(RUST_STAMP) $(GO_STAMP) $(JAVA_KIT)

install: $(STAMP) $(NODE_STAMP) kits ## Create .venv and install the project, its dev tools, the Node.js bot's packages and the kits

# The generated code is committed (see pyproject.toml); run this after changing
# protos/ and commit the result (tests/distribution/test_generated.py checks they agree).
# The generated package is named by the virtual include path, so the
# generated imports read `from mammamia_pb import arena_pb2` (rules.proto imports
# arena.proto as `mammamia_pb/arena.proto`). mypy-protobuf's plugins write the typed
# stubs (arena_pb2.pyi, arena_pb2_grpc.pyi, rules_pb2.pyi, admin_pb2.pyi, ...) that mypy reads.
proto: $(STAMP) ## Regenerate the committed gRPC code and typed stubs from protos/ into mammamia_pb/
	$(PY) -m grpc_tools.protoc -Imammamia_pb=protos/mammamia/v1 \
	    --plugin=protoc-gen-mypy=$(VENV)/bin/protoc-gen-mypy \
	    --plugin=protoc-gen-mypy_grpc=$(VENV)/bin/protoc-gen-mypy_grpc \
	    --python_out=. --grpc_python_out=. --mypy_out=. --mypy_grpc_out=. \
	    mammamia_pb/arena.proto mammamia_pb/rules.proto mammamia_pb/admin.proto

run: $(STAMP) ## Start a server with its embedded database and a demo ladder of bots
	$(VENV)/bin/mammamia demo

serve: $(STAMP) ## Start the server alone (see `mammamia serve --help`)
	$(VENV)/bin/mammamia serve

# Debian's chromium for the web page's browser tests (tests/web); where it cannot be
# installed (no root, no sudo, no package) those tests are skipped with the reason.
CHROMIUM_STAMP := $(VENV)/.chromium
$(CHROMIUM_STAMP): $(STAMP)
	@if [ ! -x /usr/bin/chromium ]; then \
	    if [ "$$(id -u)" = 0 ]; then SUDO=; elif command -v sudo >/dev/null; then SUDO="sudo -n"; \
	    else SUDO=false; fi; \
	    $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1 || \
	    { $$SUDO apt-get update -qq >/dev/null 2>&1 && \
	      $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1; } || true; \
	fi
	@if [ -x /usr/bin/chromium ]; then touch $@; \
	else echo "chromium could not be installed: the web page's browser tests will be skipped"; fi

# Debian's PostgreSQL server for the storage tests (tests/storage start their own on a
# free port); where it cannot be installed, those tests are skipped with the reason.
POSTGRES_STAMP := $(VENV)/.postgresql
$(POSTGRES_STAMP): $(STAMP)
	@if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
	    if [ "$$(id -u)" = 0 ]; then SUDO=; elif command -v sudo >/dev/null; then SUDO="sudo -n"; \
	    else SUDO=false; fi; \
	    $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null 2>&1 || \
	    { $$SUDO apt-get update -qq >/dev/null 2>&1 && \
	      $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null 2>&1; } || true; \
	fi
	@if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then touch $@; \
	else echo "PostgreSQL could not be installed: the PostgreSQL storage tests will be skipped"; fi

test: $(STAMP) $(NODE_STAMP) kits $(CHROMIUM_STAMP) $(POSTGRES_STAMP) ## Run the whole test suite
	$(PY) -m pytest -q -n 2

lint: $(STAMP) ## Check style with ruff (lint rules and formatting)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP) ## Check types with mypy --strict on every package and the tests
	$(VENV)/bin/mypy

bench: $(STAMP) ## Run the benchmarks (BENCH_OUT=FILE writes the figures as JSON)
	$(PY) -m bench $(if $(BENCH_OUT),--out $(BENCH_OUT))

clean: ## Remove the virtual environment, build output and caches
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache \
	    bots/node/node_modules kits/rust/target kits/go/bin kits/go/v1 kits/java/target
