#!/usr/bin/env bash
# One GPU session for the kernels, from the repository root on a CUDA machine (no network):
# the GPU kernel tests, the peer's ported tests, and the side-by-side timings (ours, the peer, and
# the package of OLD_REV when a checkout of it is at .old/), results under $OUT (default results/).
#   prerequisites: the peer copied into .peer/ (cp -r ../shared/peer .peer); optionally
#   git archive OLD_REV guarded_kernels | tar -x -C .old  (done here when git can)
#   bash benchmarks/gpu_run.sh            # about 6-8 minutes on an H200
set -u
OUT=${OUT:-results}
OLD_REV=${OLD_REV:-55710b7}
mkdir -p "$OUT"
export PYTHONPATH=$PWD:$PWD/.peer${PYTHONPATH:+:$PYTHONPATH}
unset TRITON_INTERPRET
start=$(date +%s)
stamp() { echo "[$(( $(date +%s) - start ))s] $*" | tee -a "$OUT/gpu_run.log"; }

if [ ! -d .old/guarded_kernels ] && git rev-parse --git-dir >/dev/null 2>&1; then
  mkdir -p .old && git archive "$OLD_REV" guarded_kernels | tar -x -C .old
fi
python - <<'PY' 2>&1 | tee "$OUT/versions.txt"
import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.get_device_name())
PY

stamp "kernel tests"
timeout 240 python -m pytest tests/kernels -q -p no:cacheprovider -x -rfE > "$OUT/kernel_tests.txt" 2>&1
stamp "kernel tests rc=$? $(tail -1 "$OUT/kernel_tests.txt")"

stamp "kernel tests through Triton's own launch path"
GUARDED_KERNELS_DIRECT_LAUNCH=0 timeout 120 python -m pytest tests/kernels/test_gumbel_sample.py \
  tests/kernels/test_resample.py -q -p no:cacheprovider -x -k "not distribution" > "$OUT/kernel_tests_jit_path.txt" 2>&1
stamp "jit-path tests rc=$? $(tail -1 "$OUT/kernel_tests_jit_path.txt")"

if [ -d .peer/tests ]; then
  stamp "ported vLLM tests"
  timeout 120 python -m pytest .peer/tests -q -p no:cacheprovider -rfE > "$OUT/peer_tests.txt" 2>&1
  stamp "peer tests rc=$? $(tail -1 "$OUT/peer_tests.txt")"
fi

OLD=()
[ -d .old/guarded_kernels ] && OLD=(--old .old)
stamp "side by side: T 1, 8, 64; V 32000, 151936, 262144"
timeout 240 python benchmarks/sampling.py --out "$OUT/side_by_side" --ts 1 8 64 "${OLD[@]}" > "$OUT/side_by_side.log" 2>&1
stamp "side by side rc=$?"

stamp "eager through Triton's own launch path (T 1, 8, 64; V 151936)"
GUARDED_KERNELS_DIRECT_LAUNCH=0 timeout 90 python benchmarks/sampling.py --out "$OUT/jit_path" --ts 1 8 64 \
  --vs 151936 > "$OUT/jit_path.log" 2>&1
stamp "jit path rc=$?"

if [ -f .peer/host_cost.py ]; then
  stamp "host cost breakdown"
  timeout 60 python .peer/host_cost.py --out "$OUT/host_cost.json" > "$OUT/host_cost.log" 2>&1
  stamp "host cost rc=$?"
fi
stamp "done"
