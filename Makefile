# The README's two commands: `make run` and `make test`. Both install missing
# Debian packages first (scripts/bootstrap), then build with CMake + Ninja.
BUILD      ?= build
TEST_BUILD ?= build-test
JOBS       ?= $(shell nproc)
CMAKE_GEN  := -G Ninja

FUZZ_BUILD ?= build-fuzz

.PHONY: all bootstrap build run demo test soak bench fuzz fuzz-smoke clean

all: build

bootstrap:
	@scripts/bootstrap

build: bootstrap
	@cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Release -DEBB_TESTS=OFF >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# The main job on its embedded defaults: `ebb serve` on 127.0.0.1:8080 with
# its data in ./ebb-data (Ctrl-C stops it cleanly).
run: build
	@scripts/run-default $(BUILD)/ebb

# `ebb top` with no server: the heaviest words of the King James Bible.
demo: build
	@scripts/demo-top $(BUILD)/ebb

# Debug build under AddressSanitizer + UndefinedBehaviorSanitizer, every test.
test: bootstrap
	@cmake -S . -B $(TEST_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DEBB_SANITIZE=ON >/dev/null
	@cmake --build $(TEST_BUILD) -j $(JOBS)
	@cd $(TEST_BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 600

# Long runs kept out of `make test`: the crash harness for 200 SIGKILL rounds.
soak: test
	@cd $(TEST_BUILD) && EBB_CRASH_ROUNDS=200 ./tests/ebb_tests --gtest_filter='Durability.CrashHarness*'

# Release benchmarks plus the comparison scripts (figures for closing notes).
bench: build
	@scripts/bootstrap --bench
	@bench/run-all $(BUILD)

# libFuzzer targets (fuzz/), built with clang under ASan + UBSan in
# $(FUZZ_BUILD): each runs FUZZ_SECONDS (default 60) from its seeds in
# fuzz/corpus/; what it finds stays in $(FUZZ_BUILD)/corpus/.
fuzz:
	@scripts/bootstrap --fuzz
	@FUZZ_BUILD=$(FUZZ_BUILD) JOBS=$(JOBS) scripts/fuzz run

# The short pass: every checked-in input once, then FUZZ_SECONDS (default 10) per target.
fuzz-smoke:
	@scripts/bootstrap --fuzz
	@FUZZ_BUILD=$(FUZZ_BUILD) JOBS=$(JOBS) scripts/fuzz smoke

clean:
	rm -rf $(BUILD) $(TEST_BUILD) $(FUZZ_BUILD)
