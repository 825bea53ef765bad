#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: builds Weir with CUDA (build-gpu/), runs every CUDA test and the
# GPU benchmark, and prints one JSON summary as the last line. One command, so that
# whoever holds a GPU can run it: `scripts/gpu-check.sh` (or `make gpu-check`). Without a GPU the
# tests report themselves skipped and the summary says so.
#   scripts/gpu-check.sh [build-dir]
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-gpu}
export PATH=/usr/local/cuda/bin:$PATH
gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
echo "GPU: ${gpu:-none visible}"
if [[ ! -f $build/build.ninja ]]; then
  meson setup "$build" -Dcuda=enabled -Dtests=true -Dbenchmarks=true -Dpython=disabled || exit 1
fi
ninja -C "$build" || exit 1

results=()
# name|command: each CUDA test suite (doctest prints its own skips); the GPU benchmark when present.
checks=(
  "cuda-runtime|$build/tests/test_common -tc=*CUDA*"
  "cuda-kernels-and-sessions|$build/tests/test_cuda"
  "device-streams|$build/tests/test_actors -tc=*stream*,*event*,*poller*"
)
# The Python GPU tests and the GPU benchmark (bench/gpu_step.py: Weir against PyTorch eager and with CUDA
# graphs), where `make venv` has built the bindings (from build/, which has CUDA by default).
if [[ -x .venv/bin/python ]]; then
  checks+=("python-gpu|.venv/bin/python -m pytest -q tests/python/test_gpu.py")
  # NCCL between processes, one GPU each: skips (saying so) with fewer than 2 GPUs.
  checks+=("nccl-two-processes|.venv/bin/python -m pytest -q -rs tests/python/test_distributed.py -k gpu_per_process")
  checks+=("gpu-step-bench|.venv/bin/python bench/gpu_step.py")
fi
status=0
for check in "${checks[@]}"; do
  name=${check%%|*}
  command=${check#*|}
  log="$build/gpu-check-$name.log"
  echo "== $name: $command"
  start=$(date +%s.%N)
  $command >"$log" 2>&1
  rc=$?
  seconds=$(printf '%.3f' "$(echo "$(date +%s.%N) - $start" | bc)")
  tail -4 "$log"
  # doctest's tally (tests that skip themselves without a GPU count as skipped, as filtered ones do).
  passed=$(grep -Eo 'test cases: *[0-9]+ \| *[0-9]+ passed' "$log" | grep -Eo '[0-9]+ passed' | grep -Eo '[0-9]+')
  failed=$(grep -Eo '[0-9]+ failed \|' "$log" | head -1 | grep -Eo '[0-9]+')
  results+=("\"$name\": {\"rc\": $rc, \"seconds\": ${seconds}, \"passed\": ${passed:-null}, \"failed\": ${failed:-null}, \"log\": \"$log\"}")
  [[ $rc -eq 0 ]] || status=1
done
joined=$(IFS=,; echo "${results[*]}")
echo "{\"gpu\": \"${gpu:-none}\", \"gpu_tests_ran\": $([[ -n $gpu ]] && echo true || echo false), \"ok\": $([[ $status -eq 0 ]] && echo true || echo false), \"checks\": {${joined}}}"
exit $status
