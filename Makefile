# Two commands on a fresh Debian 12 machine: `make demo` and `make test`.
BUILD ?= build
BUILD_SAN ?= build-asan
# The Python package: .venv (Debian's python3 with its site packages), installed by pip from $(BUILD).
VENV ?= .venv
MESON_FLAGS ?=
JOBS ?= $(shell nproc)

.PHONY: all setup configure build venv data demo test test-release test-python test-sanitize bench gpu-check clean

all: build venv

setup:
	@scripts/setup.sh

$(VENV)/bin/python: | setup
	/usr/bin/python3 -m venv --system-site-packages $(VENV)

# One build for C++ and Python: $(BUILD) holds the library, its tests, examples and benchmarks, and
# the package weir, which pip installs into .venv through meson-python from this same folder
# (builddir=): meson-python reconfigures it with pyproject.toml's arguments, which leave these
# options as they are, and recompiles only what changed. meson-python passes its native file (the
# venv's python) and prefix; configuring with the same ones first keeps its reconfigure a no-op.
PY_NATIVE_FILE = .mesonpy-native-file.ini
$(BUILD)/build.ninja: | $(VENV)/bin/python
	printf "\n[binaries]\npython = '%s'\n" "$(abspath $(VENV))/bin/python" > $(PY_NATIVE_FILE)
	meson setup $(BUILD) --prefix=/usr --native-file=$(abspath $(PY_NATIVE_FILE)) -Dpython=enabled \
	  -Dtests=true -Dexamples=true -Dbenchmarks=true $(MESON_FLAGS)

configure: setup $(BUILD)/build.ninja

build: configure
	scripts/reconfigure-on-new-sources.sh $(BUILD)
	ninja -C $(BUILD) -j $(JOBS)

# `.venv/bin/python -c "import weir"` works: pip installs the package built in $(BUILD). No network.
venv: build
	$(abspath $(VENV))/bin/python -m pip install --quiet --no-build-isolation --no-deps --no-index \
	  --config-settings=builddir=$(abspath $(BUILD)) .

# The real MNIST IDX files, into $WEIR_DATA_DIR (default ~/.cache/weir/mnist); no network once there.
data:
	@scripts/fetch-mnist.sh

# The seeds' async MLP programs through the Python front end: train 20 epochs with tp.Callback
# results, save ./mlp_models_1, load it and print the test accuracy (the seeds report 97.6 %).
# Then the C++ API's version of the same: train, save, reload.
DEMO_DIR ?= $(BUILD)/demo
demo: build venv data
	mkdir -p $(DEMO_DIR)
	cd $(DEMO_DIR) && rm -rf mlp_models_1 && $(abspath $(VENV))/bin/python $(CURDIR)/examples/python/async_single_job.py --epochs 20
	cd $(DEMO_DIR) && $(abspath $(VENV))/bin/python $(CURDIR)/examples/python/async_batch_job.py
	$(BUILD)/examples/predict_mlp
	$(BUILD)/examples/train_mnist_mlp --epochs 15 --save $(BUILD)/mlp_model
	$(BUILD)/examples/train_mnist_mlp --load $(BUILD)/mlp_model

# Every test: the release build, then the C++ suites again under ASan+UBSan.
test: test-release test-python test-sanitize

test-release: build data
	meson test -C $(BUILD) --print-errorlogs --num-processes 1

test-python: venv data
	$(VENV)/bin/python -m pytest -q -p no:cacheprovider tests/python

# -O1 (what ASan's authors advise) and -g1 (line tables: reports keep their file:line) with assertions
# on: the build compiles in about half the time of -O2 -g, the longest step of `make test`.
$(BUILD_SAN)/build.ninja:
	meson setup $(BUILD_SAN) -Doptimization=1 -Ddebug=false -Db_ndebug=false -Dcpp_args=-g1 \
	  -Db_sanitize=address,undefined -Db_lundef=false -Dcuda=disabled -Dtests=true -Dpython=disabled $(MESON_FLAGS)

test-sanitize: setup $(BUILD_SAN)/build.ninja
	scripts/reconfigure-on-new-sources.sh $(BUILD_SAN)
	ninja -C $(BUILD_SAN) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  meson test -C $(BUILD_SAN) --print-errorlogs --num-processes 1 --timeout-multiplier 4

# On a machine with a GPU: builds with CUDA, runs the CUDA tests and the GPU benchmark, prints JSON.
gpu-check: setup
	scripts/gpu-check.sh

bench: build venv
	WEIR_BENCH_DEPS=1 scripts/setup.sh
	$(BUILD)/bench/actor_overhead
	/usr/bin/python3 bench/compare_pytorch.py --build $(BUILD)
	/usr/bin/python3 bench/amp.py --build $(BUILD)
	/usr/bin/python3 bench/async_pipeline.py --build $(BUILD)
	/usr/bin/python3 bench/data_parallel.py
	/usr/bin/python3 bench/multi_process.py --build $(BUILD)
	/usr/bin/python3 bench/pipeline_processes.py
	/usr/bin/python3 bench/data_reader.py
	/usr/bin/python3 bench/model_zoo.py --weir-binary $(BUILD)/bench/train_step
	/usr/bin/python3 bench/zoo_data_parallel.py

clean:
	rm -rf $(BUILD) $(BUILD_SAN) $(VENV) .mesonpy-native-file.ini
