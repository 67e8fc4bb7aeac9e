# The README's two commands: `make run` and `make test`. Both install missing
# Debian packages first (scripts/bootstrap), then build with CMake + Ninja.
BUILD      ?= build
TEST_BUILD ?= build-test
JOBS       ?= $(shell nproc)
CMAKE_GEN  := -G Ninja

.PHONY: all bootstrap build run test bench clean

all: build

bootstrap:
	@scripts/bootstrap

build: bootstrap
	@cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Release -DEBB_TESTS=OFF >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# The main job on its embedded default: the heaviest words of the King James
# Bible (Debian's bible-kjv), streamed through `ebb top`.
run: build
	@scripts/run-default $(BUILD)/ebb

# Debug build under AddressSanitizer + UndefinedBehaviorSanitizer, every test.
test: bootstrap
	@cmake -S . -B $(TEST_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DEBB_SANITIZE=ON >/dev/null
	@cmake --build $(TEST_BUILD) -j $(JOBS)
	@cd $(TEST_BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 600

# Release benchmarks plus the comparison scripts (figures for closing notes).
bench: build
	@scripts/bootstrap --bench
	@bench/run-all $(BUILD)

clean:
	rm -rf $(BUILD) $(TEST_BUILD)
