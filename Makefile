# The two commands of the README: `make demo` and `make test`. Each installs what is missing
# (Debian packages, then Python packages into .venv), configures, builds and runs. A second run
# only rebuilds what changed.
SHELL := /bin/bash
.DEFAULT_GOAL := help
PYTHON ?= python3
VENV := .venv
JOBS ?= $(shell nproc)

.PHONY: help deps venv build build-asan test test-cpp test-asan test-tsan test-python test-fuzz demo format clean

help:
	@echo "make demo   pack the sample documents, verify them, show what was stored"
	@echo "make test   build everything and run every test (release, ASan+UBSan, TSan, fuzzers)"
	@echo "make build  build only; the CLI lands at build/bin/docfeed"

deps:
	@scripts/install-deps.sh

# .venv holds the test references (datasets, pyarrow, Pillow); .venv/donut-ref holds
# transformers 4.x, which cannot share .venv with datasets 5.x (see requirements-donut-ref.txt).
$(VENV)/.installed: python/requirements-dev.txt python/requirements-donut-ref.txt
	@$(MAKE) --no-print-directory deps
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -r python/requirements-dev.txt
	rm -rf $(VENV)/donut-ref
	$(VENV)/bin/pip install -q --no-deps --target $(VENV)/donut-ref -r python/requirements-donut-ref.txt
	@touch $@

venv: $(VENV)/.installed

build/CMakeCache.txt:
	@$(MAKE) --no-print-directory deps
	cmake --preset release

build: deps build/CMakeCache.txt
	cmake --build build -j $(JOBS)

build/asan/CMakeCache.txt:
	@$(MAKE) --no-print-directory deps
	cmake --preset asan

build-asan: deps build/asan/CMakeCache.txt
	cmake --build build/asan -j $(JOBS)

test-cpp: build
	ctest --test-dir build --output-on-failure -j $(JOBS)

test-asan: build-asan
	ctest --test-dir build/asan --output-on-failure -j $(JOBS)

build/tsan/CMakeCache.txt:
	@$(MAKE) --no-print-directory deps
	cmake --preset tsan

# ThreadSanitizer over the tests that run threads (the pack pipeline and its ordered pool).
TSAN_TESTS := base_test pack_test
test-tsan: deps build/tsan/CMakeCache.txt
	cmake --build build/tsan -j $(JOBS) --target $(TSAN_TESTS)
	for t in $(TSAN_TESTS); do TSAN_OPTIONS=halt_on_error=1 build/tsan/bin/$$t || exit 1; done

test-python: build venv
	DOCFEED_BUILD_DIR=build $(VENV)/bin/python -m pytest -q tests/python tests/kernels

# Each fuzz target briefly (libFuzzer + ASan/UBSan); `fuzz/run_fuzz.sh 600` for long runs.
test-fuzz: deps
	fuzz/run_fuzz.sh 10

test: test-cpp test-python test-asan test-tsan test-fuzz

demo: build venv
	scripts/demo.sh

format:
	git ls-files '*.h' '*.cc' | xargs clang-format -i

clean:
	rm -rf build out
