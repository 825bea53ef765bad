# Two commands on a fresh Debian 12 machine: `make demo` and `make test`.
BUILD ?= build
BUILD_SAN ?= build-asan
MESON_FLAGS ?=
JOBS ?= $(shell nproc)

.PHONY: all setup configure build data demo test test-release test-sanitize bench clean

all: build

setup:
	@scripts/setup.sh

$(BUILD)/build.ninja:
	meson setup $(BUILD) $(MESON_FLAGS)

configure: setup $(BUILD)/build.ninja

build: configure
	ninja -C $(BUILD) -j $(JOBS)

# The real MNIST IDX files, into $WEIR_DATA_DIR (default ~/.cache/weir/mnist); no network once there.
data:
	@scripts/fetch-mnist.sh

# Trains the seeds' MNIST MLP to >= 97.6 % (about 15 epochs, ~20 s here), saves it, reloads it.
demo: build data
	$(BUILD)/examples/predict_mlp
	$(BUILD)/examples/train_mnist_mlp --epochs 15 --save $(BUILD)/mlp_model
	$(BUILD)/examples/train_mnist_mlp --load $(BUILD)/mlp_model

# Every test: the release build, then the C++ suites again under ASan+UBSan.
test: test-release test-sanitize

test-release: build data
	meson test -C $(BUILD) --print-errorlogs --num-processes 1

$(BUILD_SAN)/build.ninja:
	meson setup $(BUILD_SAN) -Dbuildtype=debugoptimized -Db_sanitize=address,undefined -Db_lundef=false \
	  -Dcuda=disabled -Dbenchmarks=false -Dexamples=false $(MESON_FLAGS)

test-sanitize: setup $(BUILD_SAN)/build.ninja
	ninja -C $(BUILD_SAN) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  meson test -C $(BUILD_SAN) --print-errorlogs --num-processes 1 --timeout-multiplier 4

bench: build
	WEIR_BENCH_DEPS=1 scripts/setup.sh
	$(BUILD)/bench/actor_overhead
	/usr/bin/python3 bench/compare_mlp_train.py --build $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD_SAN)
