#!/usr/bin/env bash
# One GPU session for the kernels, from the repository root on a CUDA machine (no network):
# the GPU kernel tests (through the kept-kernel launch and through Triton's own), the peer's
# ported tests, and the side-by-side timings (ours, the peer, and the package of OLD_REV when a
# checkout of it is at .old/), results under $OUT (default results/).
#   prerequisites: the peer copied into .peer/ (cp -r ../shared/peer .peer); optionally
#   git archive OLD_REV guarded_kernels | tar -x -C .old  (done here when git can)
#   bash benchmarks/gpu_run.sh            # about 6-8 minutes on an H200; stops by 9.5
# Every stage has its own limit, and none runs past the session's deadline (DEADLINE_S, default
# 570 s after the start), so a slow stage costs the stages after it, never the logs.
# STRIDECHECK_COMMIT=<hash> names the tree in the results where the copy's .git is stale.
set -u
OUT=${OUT:-results}
OLD_REV=${OLD_REV:-55710b7}
mkdir -p "$OUT"
export PYTHONPATH=$PWD:$PWD/.peer${PYTHONPATH:+:$PYTHONPATH}
unset TRITON_INTERPRET
start=$(date +%s)
deadline=$(( start + ${DEADLINE_S:-570} ))
stamp() { echo "[$(( $(date +%s) - start ))s] $*" | tee -a "$OUT/gpu_run.log"; }
# limit N: N seconds, or what is left before the deadline if less (at least 1).
limit() { local left=$(( deadline - $(date +%s) )); (( left < $1 )) && echo $(( left > 1 ? left : 1 )) || echo "$1"; }

if [ ! -d .old/guarded_kernels ] && git rev-parse --git-dir >/dev/null 2>&1; then
  mkdir -p .old && git archive "$OLD_REV" guarded_kernels | tar -x -C .old
fi
python - <<'PY' 2>&1 | tee "$OUT/versions.txt"
import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.get_device_name())
PY

stamp "kernel tests (without the distribution tests)"
timeout "$(limit 150)" python -m pytest tests/kernels -q -p no:cacheprovider -n 4 -rfE \
  --ignore=tests/kernels/test_gpu_distribution.py > "$OUT/kernel_tests.txt" 2>&1
stamp "kernel tests rc=$? $(tail -1 "$OUT/kernel_tests.txt")"

stamp "distribution tests (4.2 M draws each)"
timeout "$(limit 75)" python -m pytest tests/kernels/test_gpu_distribution.py -q -p no:cacheprovider -rfE -s \
  > "$OUT/distribution_tests.txt" 2>&1
stamp "distribution tests rc=$? $(tail -1 "$OUT/distribution_tests.txt")"

stamp "kernel tests through Triton's own launch path"
GUARDED_KERNELS_DIRECT_LAUNCH=0 timeout "$(limit 75)" python -m pytest tests/kernels/test_gumbel_sample.py \
  tests/kernels/test_resample.py tests/kernels/test_rejection.py tests/kernels/test_reference_kernels.py -q -p no:cacheprovider -n 4 -rfE \
  > "$OUT/kernel_tests_jit_path.txt" 2>&1
stamp "jit-path tests rc=$? $(tail -1 "$OUT/kernel_tests_jit_path.txt")"

if [ -d .peer/tests ]; then
  stamp "ported vLLM tests"
  timeout "$(limit 75)" python -m pytest .peer/tests -q -p no:cacheprovider -rfE > "$OUT/peer_tests.txt" 2>&1
  stamp "peer tests rc=$? $(tail -1 "$OUT/peer_tests.txt")"
fi

OLD=()
[ -d .old/guarded_kernels ] && OLD=(--old .old)
stamp "side by side: T 1, 8, 64; V 32000, 151936, 262144"
timeout "$(limit 200)" python benchmarks/sampling.py --out "$OUT/side_by_side" --ts 1 8 64 "${OLD[@]}" \
  > "$OUT/side_by_side.log" 2>&1
stamp "side by side rc=$?"

stamp "eager through Triton's own launch path (T 1, 8; V 151936)"
GUARDED_KERNELS_DIRECT_LAUNCH=0 timeout "$(limit 45)" python benchmarks/sampling.py --out "$OUT/jit_path" \
  --ts 1 8 --vs 151936 > "$OUT/jit_path.log" 2>&1
stamp "jit path rc=$?"
stamp "done"
