# The README's two commands, as thin wrappers over tools/install-deps.sh,
# CMake and ctest. `make test` also builds and runs the unit and lit tiers
# under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/), then
# installs the Python package into .venv (`pip install .`, built in
# build-python/) and runs its pytest suite against build/'s snugc.
BUILD_DIR ?= build
ASAN_DIR ?= build-asan
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps build build-asan test test-asan test-python python demo zoo bench fuzz fuzz-mutants clean

all: build

deps:
	@tools/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD_DIR) -j $(JOBS)

build-asan: deps
	@cmake -S . -B $(ASAN_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSNUG_SANITIZE=ON $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(ASAN_DIR) -j $(JOBS)

test-asan: build-asan
	@echo "== unit and lit tiers under ASan + UBSan =="
	@ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --test-dir $(ASAN_DIR) -L "unit|lit" --output-on-failure -j $(JOBS)

test: test-asan build
	@echo "== all test tiers =="
	@ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)
	@$(MAKE) --no-print-directory test-python

# The Python package, from this checkout, into .venv (scikit-build-core and
# nanobind from tools/requirements.txt, hence no build isolation).
python: deps
	@echo "== Python package: pip install . into .venv =="
	@CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) .venv/bin/python -m pip install -q \
	  --no-build-isolation --disable-pip-version-check .

test-python: python build
	@echo "== Python package tests (pytest) =="
	@SNUG_TOOLS_DIR=$(CURDIR)/$(BUILD_DIR)/bin .venv/bin/python -m pytest -q python/tests

demo: build
	@tools/demo.sh $(BUILD_DIR)

zoo: deps
	@.venv/bin/python models/export_models.py

bench: build zoo
	@bench/run.sh $(BUILD_DIR)

fuzz: build
	@bench/fuzz/run.sh $(BUILD_DIR)

fuzz-mutants: build
	@bench/fuzz/mutants.sh $(BUILD_DIR)

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR) build-fuzz build-mutants build-python
