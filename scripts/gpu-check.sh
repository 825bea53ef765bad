#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: builds Weir with CUDA (build-gpu/), runs every CUDA test and the
# GPU benchmark, and prints one JSON summary as the last line. One command, so that whoever holds a
# GPU can run it: `scripts/gpu-check.sh` (or `make gpu-check`). Without a GPU the tests report
# themselves skipped and the summary says so.
#   scripts/gpu-check.sh [build-dir]
#   scripts/gpu-check.sh --prebuilt .gpu-bundle/build
# --prebuilt: on a GPU machine without Weir's build dependencies, run the binaries that
# scripts/gpu-bundle.sh packed here (their libraries unpacked beside them; the machine's own cuBLAS,
# cuDNN and NCCL found on it), with the benchmark's Weir rows from the C++ API (bench/train_step).
# Logs go to $OUT when set (a lent machine's output folder), else to the build folder.
# Each check is bounded (GPU_CHECK_TIMEOUT seconds, default 300) so that a hang fails it.
# GPU_CHECK_NCU=0 skips the per-kernel times under Nsight Compute (minutes of device time), GPU_CHECK_NSYS=0
# the CUDA calls' times under Nsight Systems; GPU_CHECK_ONLY=REGEX runs only the checks so named.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/cuda/bin:$PATH
prebuilt=false
if [[ ${1:-} == --prebuilt ]]; then
  prebuilt=true
  build=${2:?--prebuilt needs the build folder of the bundle}
else
  build=${1:-build-gpu}
fi
logs=${OUT:-$build}
bound=${GPU_CHECK_TIMEOUT:-300}
gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
echo "GPU: ${gpu:-none visible}"

# The directory of the first file named $1 under the given roots (empty when none).
library_dir() {
  local name=$1; shift
  local found
  found=$(find -H "$@" -name "$name" 2>/dev/null | head -1)
  [[ -n $found ]] && dirname "$found"
}

# Of every libcudnn.so.9 under the given roots, the folder of the newest (cudnnGetVersion): the
# machine's own and PyTorch's may differ, and both sides of the benchmark then run the same one.
newest_cudnn_dir() {
  find -H "$@" -name libcudnn.so.9 2>/dev/null | python3 -c '
import ctypes, os, sys
best = (0, "")
for path in sys.stdin.read().split():
    try:
        version = ctypes.CDLL(path).cudnnGetVersion()
    except OSError as error:
        print(f"  (cuDNN at {path}: {error})", file=sys.stderr)
        continue
    print(f"  (cuDNN {version} at {path})", file=sys.stderr)
    best = max(best, (version, os.path.dirname(path)))
print(best[1])'
}

if $prebuilt; then
  libs=/tmp/weir-gpu-libs
  mkdir -p "$libs" && tar -C "$libs" -xJf "$build/../lib.tar.xz" || exit 1
  roots=(/usr/local/cuda/lib64 /usr/local/cuda/targets /usr/lib/x86_64-linux-gnu /opt /usr/local/lib)
  library_path=$libs/lib
  for name in libcublasLt.so.13 libcublas.so.13 libcudnn.so.9 libnccl.so.2; do
    if [[ $name == libcudnn.so.9 ]]; then
      dir=$(newest_cudnn_dir "${roots[@]}")
    else
      dir=$(library_dir "$name" "${roots[@]}")
    fi
    [[ -n $dir ]] || { echo "gpu-check: $name is not on this machine"; exit 1; }
    echo "  $name: $dir"
    [[ $name == libcudnn.so.9 ]] && echo "  cuDNN $(python3 -c "import ctypes; print(ctypes.CDLL('$dir/$name').cudnnGetVersion())")"
    library_path=$library_path:$dir
  done
  export LD_LIBRARY_PATH=$library_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  # For runs after this one (a memory checker over a test binary, say): `source $logs/gpu-env.sh`.
  echo "export LD_LIBRARY_PATH=$LD_LIBRARY_PATH" >"$logs/gpu-env.sh"
else
  if [[ ! -f $build/build.ninja ]]; then
    meson setup "$build" -Dcuda=enabled -Dtests=true -Dbenchmarks=true -Dpython=disabled || exit 1
  fi
  scripts/reconfigure-on-new-sources.sh "$build" || exit 1
  ninja -C "$build" || exit 1
fi

results=()
# name|command: each CUDA test suite (doctest prints its own skips); the GPU benchmark.
checks=(
  "cuda-runtime|$build/tests/test_common -tc=*CUDA*"
  "cuda-kernels-and-sessions|$build/tests/test_cuda --duration=true"
  # Ops whose conformance samples live in their own test files (tests/conformance.hpp).
  "op-conformance|$build/tests/test_ops -tc=*CUDA*"
  "device-streams|$build/tests/test_actors -tc=*stream*,*event*,*poller*"
)
if $prebuilt; then
  # PyTorch is the machine's python3; Weir's rows come from the C++ API.
  step_bench="python3 bench/gpu_step.py --weir-binary $build/bench/train_step --torch-python $(command -v python3) --worker-timeout 120"
  # Weir as it runs by default against PyTorch eager and with CUDA graphs, and Weir's variants: every
  # copy on the copy streams, no CUDA graphs, the convolutions in NHWC (the channels-last pass), every
  # executor an actor of the runtime's threads (not lent to the caller and the poller), the sync caller
  # waiting for the GPU's event itself (not yet measured on a GPU; off by default), the updates not
  # waiting for the commit (one CUDA graph a step instead of two).
  checks+=("gpu-step-mlp|$step_bench --models mlp --kinds weir,weir-no-commit,weir-actor-threads,weir-caller-waits,weir-copy-streams,weir-no-graphs,torch-eager,torch-graph,torch-graph-host-batch")
  checks+=("gpu-step-lenet|$step_bench --models lenet --kinds weir,weir-no-commit,weir-actor-threads,weir-caller-waits,weir-nhwc,weir-no-graphs,torch-eager,torch-graph,torch-graph-host-batch")
  # TF32 tensor cores for f32 products, and mixed precision (f16), on both sides.
  checks+=("gpu-step-tf32|$step_bench --kinds weir,weir-tf32,torch-graph,torch-graph-tf32")
  checks+=("gpu-step-amp|$step_bench --kinds weir-amp,torch-graph-amp")
  # cuDNN's legacy algorithms alone (no graph-API engines), against gpu-step-lenet's rows.
  checks+=("gpu-step-cudnn-legacy|env WEIR_CUDNN_GRAPH=0 $step_bench --models lenet --kinds weir,weir-nhwc")
  # Which algorithm or engine each convolution of a LeNet step chose, and every candidate's time.
  for variant in "" --nhwc --tf32 --amp; do
    checks+=("cudnn-choices-lenet${variant}|env WEIR_CUDNN_TRACE=1 $build/bench/train_step --gpu --model lenet --steps 1 --repeats 1 --warmup 0 --no-async --no-infer $variant")
  done
  # How long a poller queries an event before it sleeps (WEIR_CUDA_SPIN_US): at once, and never (a
  # spinning core), against the default's row above.
  checks+=("gpu-step-sleep-at-once|env WEIR_CUDA_SPIN_US=0 $step_bench --kinds weir")
  checks+=("gpu-step-spin-only|env WEIR_CUDA_SPIN_US=100000000 $step_bench --kinds weir,weir-no-graphs")
  # Calls in flight together (8): the steps per second a pipeline of calls reaches.
  checks+=("train-step-async|$build/bench/train_step --gpu --model mlp --steps 200 --repeats 5")
  checks+=("train-step-async-lenet|$build/bench/train_step --gpu --model lenet --steps 100 --repeats 3")
  # The same without the commit before the updates (one CUDA graph a step): what the commit costs.
  checks+=("train-step-async-no-commit|$build/bench/train_step --gpu --model mlp --steps 200 --repeats 5 --no-commit")
  # Mixed precision (f16 matmuls and convolutions on the GPU): against the two rows above.
  checks+=("train-step-amp-mlp|$build/bench/train_step --gpu --amp --model mlp --steps 200 --repeats 5")
  checks+=("train-step-amp-lenet|$build/bench/train_step --gpu --amp --model lenet --steps 100 --repeats 3")
  # ResNet-50 (batch 64 of 224x224) and BERT-base (batch 32 of sequences of 128) training and inference:
  # Weir (the C++ API) against PyTorch eager, in FP32, TF32 and f16 mixed precision; where Weir's step
  # goes, op by op (an actor per kernel, each one's device time in the trace; bench/trace_ops.py); then
  # against torch.compile (its compilation in the warm-up, a minute or more a row).
  zoo="python3 bench/model_zoo.py --device gpu --weir-binary $build/bench/train_step --torch-python $(command -v python3) --worker-timeout 280"
  for model in resnet50 bert; do
    checks+=("zoo-$model|$zoo --models $model --kinds weir,torch-eager,weir-tf32,torch-eager-tf32,weir-amp,torch-eager-amp")
    checks+=("zoo-$model-trace|$build/bench/train_step --gpu --model $model --steps 3 --repeats 1 --warmup 2 --no-async --no-infer --no-stream-graphs --trace $logs/trace-$model.json")
  done
  for model in resnet50 bert; do
    checks+=("zoo-$model-compile|$zoo --models $model --kinds torch-compile-tf32,torch-compile,torch-compile-amp")
  done
  # PyTorch's step op by op (torch.profiler's device time), beside the zoo-*-trace checks' view of Weir's.
  for model in resnet50 bert; do
    checks+=("zoo-$model-torch-profile|$zoo --models $model --kinds torch-eager,torch-eager-tf32 --torch-profile")
  done
  # Idle actor threads that poll about 0.5 ms instead of a few us (no wake-ups, a core spinning).
  checks+=("train-step-idle-poll|env WEIR_IDLE_POLL_ATTEMPTS=30000 $build/bench/train_step --gpu --model mlp --steps 200 --repeats 5 --no-async --no-infer")
  # Each actor's busy time and the call latency (the session's profiler), on stderr; then 20 steps under
  # the timeline trace (summed up below by bench/trace_gaps.py: where a step's host latency goes).
  for model in mlp lenet; do
    checks+=("train-step-profile-$model|$build/bench/train_step --gpu --model $model --steps 100 --repeats 1 --no-async --no-infer --profile --trace $logs/trace-$model.json")
  done
elif [[ -x .venv/bin/python ]]; then
  # The Python GPU tests and the GPU benchmark (bench/gpu_step.py: Weir against PyTorch eager and with
  # CUDA graphs), where `make venv` has built the bindings (from build/, which has CUDA by default).
  checks+=("python-gpu|.venv/bin/python -m pytest -q tests/python/test_gpu.py")
  # NCCL between processes, one GPU each: skips (saying so) with fewer than 2 GPUs.
  checks+=("nccl-two-processes|.venv/bin/python -m pytest -q -rs tests/python/test_distributed.py -k gpu_per_process")
  checks+=("gpu-step-bench|.venv/bin/python bench/gpu_step.py")
fi
status=0
for check in "${checks[@]}"; do
  name=${check%%|*}
  command=${check#*|}
  [[ $name =~ ${GPU_CHECK_ONLY:-.} ]] || continue
  log="$logs/gpu-check-$name.log"
  echo "== $name: $command"
  start=$(date +%s.%N)
  timeout -k 10 "$bound" $command >"$log" 2>&1
  rc=$?
  [[ $rc -eq 124 || $rc -eq 137 ]] && echo "gpu-check: $name ran past ${bound} s and was stopped" | tee -a "$log"
  seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
  tail -4 "$log"
  # doctest's tally (tests that skip themselves without a GPU count as skipped, as filtered ones do).
  passed=$(grep -Eo 'test cases: *[0-9]+ \| *[0-9]+ passed' "$log" | grep -Eo '[0-9]+ passed' | grep -Eo '[0-9]+')
  failed=$(grep -Eo '[0-9]+ failed \|' "$log" | head -1 | grep -Eo '[0-9]+')
  results+=("\"$name\": {\"rc\": $rc, \"seconds\": ${seconds}, \"passed\": ${passed:-null}, \"failed\": ${failed:-null}, \"log\": \"$log\"}")
  [[ $rc -eq 0 ]] || status=1
  # A failed test binary (a crash stops it at the case that crashed): each of its cases once more, on its
  # own, so that the log names every failing case ('?' stands for the commas doctest's filter splits at).
  if [[ $rc -ne 0 && $command == */tests/test_* ]]; then
    binary=${command%% *}
    $binary -ltc 2>/dev/null | sed -n '/^====/,/^====/p' | grep -v '^====' | while read -r case_name; do
      timeout -k 5 "$bound" "$binary" -tc="${case_name//,/?}" >>"$logs/gpu-check-$name-cases.log" 2>&1
      echo "case rc=$?: $case_name"
    done | tee -a "$logs/gpu-check-$name-cases.log" | grep -v '^case rc=0'
  fi
done
for model in mlp lenet; do
  if [[ -f $logs/trace-$model.json ]]; then
    echo "== where a $model step's time goes (bench/trace_gaps.py $logs/trace-$model.json)"
    python3 bench/trace_gaps.py "$logs/trace-$model.json" | tee "$logs/trace-gaps-$model.txt"
  fi
done
for model in resnet50 bert; do
  if [[ -f $logs/trace-$model.json ]]; then
    echo "== a $model step's device time by op type (bench/trace_ops.py $logs/trace-$model.json)"
    python3 bench/trace_ops.py "$logs/trace-$model.json" --top 25 | tee "$logs/trace-ops-$model.txt"
  fi
done
# The host's CUDA calls of a train step (count, time each), where Nsight Systems is installed
# (GPU_CHECK_NSYS=0: not): what a step's submission spends in the CUDA runtime. Logs: cuda-api-*.txt.
nsys_binary=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
if [[ ${GPU_CHECK_NSYS:-1} != 0 && -n $nsys_binary && -n $gpu ]]; then
  for model in mlp lenet; do
    echo "== CUDA calls of 200 $model steps (nsys, cuda_api_sum)"
    timeout -k 10 "$bound" "$nsys_binary" profile -t cuda --sample=none --cpuctxsw=none -f true -o "/tmp/weir-nsys-$model" \
      "$build/bench/train_step" --gpu --model "$model" --steps 200 --repeats 1 --warmup 20 --no-async --no-infer >/dev/null 2>&1
    "$nsys_binary" stats -q --report cuda_api_sum "/tmp/weir-nsys-$model.nsys-rep" >"$logs/cuda-api-$model.txt" 2>&1
    head -16 "$logs/cuda-api-$model.txt"
  done
fi
# Where the GPU time of a train step goes, where Nsight Compute is installed (GPU_CHECK_NCU=0: not): each kernel's time per
# step, Weir's (the C++ benchmark) and PyTorch's (its CUDA-graph worker: 3 side-stream warm-up steps,
# then the replays), for the MLP and LeNet. Logs: kernel-times-*.txt.
if [[ ${GPU_CHECK_NCU:-1} != 0 ]] && command -v ncu >/dev/null && [[ -n $gpu ]]; then
  torch_python=$($prebuilt && command -v python3 || echo /usr/bin/python3)
  for model in mlp lenet; do
    for side in weir torch; do
      csv=/tmp/weir-ncu-$side-$model.csv
      if [[ $side == weir ]]; then
        program=("$build/bench/train_step" --gpu --model "$model" --steps 10 --repeats 1 --warmup 2 --no-async --no-infer)
        steps=12
      else
        program=("$torch_python" bench/gpu_step.py --worker torch-graph --model "$model" --steps 10 --repeats 1 --warmup 2)
        steps=15
      fi
      echo "== kernel times, $side $model: ${program[*]}"
      timeout -k 10 "$bound" ncu --clock-control none --metrics gpu__time_duration.sum --csv --log-file "$csv" \
        "${program[@]}" >/dev/null 2>&1
      python3 bench/kernel_times.py "$csv" --per "$steps" --top 15 >"$logs/kernel-times-$side-$model.txt" 2>&1
      head -8 "$logs/kernel-times-$side-$model.txt"
    done
  done
fi
joined=$(IFS=,; echo "${results[*]}")
echo "{\"gpu\": \"${gpu:-none}\", \"gpu_tests_ran\": $([[ -n $gpu ]] && echo true || echo false), \"ok\": $([[ $status -eq 0 ]] && echo true || echo false), \"checks\": {${joined}}}"
exit $status
