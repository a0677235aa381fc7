#!/usr/bin/env bash
# The GPU checks, prepared for whenever a CUDA machine is available (well under 10 minutes on one GPU):
#
#   bash bench/gpu_check.sh [OUT]        # OUT: folder for the records (default build/gpu_check)
#
# 1. the CUDA tests of tests/test_devices.py: every probe's smoke preset with device=cuda keeps every
#    identity, against the CPU run of the same config (the largest relative scalar difference is printed),
#    and a sweep on a local cluster of one worker per GPU;
# 2. every probe's smoke preset through the command line with --device cuda (exit code, wall time, JSON);
# 3. the forward, training and ICL benchmarks on the GPU (bench/run.py --device cuda --no-record), beside
#    the same benchmarks on the CPU for the ratio.
# Everything lands in OUT: gpu_check.log (all output), machine.txt (nvidia-smi, torch), the JSON results.
# Record the numbers in bench/results/ with the machine's description.
# GPU_CHECK_DEVICE=cpu runs every step on the CPU instead: a dry run of this script on any machine.
set -u
cd "$(dirname "$0")/.."
OUT=${1:-build/gpu_check}
mkdir -p "$OUT"
PY=${PY:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
export TQDM_DISABLE=1 MPLBACKEND=agg PYTHONHASHSEED=0
export WORKBENCH_CACHE=${WORKBENCH_CACHE:-$OUT/cache}
LOG="$OUT/gpu_check.log"
: >"$LOG"
say() { echo "== $*" | tee -a "$LOG"; }

{
    nvidia-smi 2>&1 || echo "nvidia-smi: not found"
    "$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'available', torch.cuda.is_available()); print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no GPU')"
    nproc
} >"$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt" | tee -a "$LOG"
DEV=${GPU_CHECK_DEVICE:-cuda}
if [ "$DEV" = cuda ] && ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
    say "torch sees no CUDA device: nothing to check here"
    exit 3
fi

status=0
say "1. tests/test_devices.py on CUDA"
"$PY" -m pytest -q -s -p no:cacheprovider tests/test_devices.py 2>&1 | tee -a "$LOG"
[ "${PIPESTATUS[0]}" = 0 ] || status=1

say "2. every probe's smoke preset with --device $DEV"
for name in $("$PY" -c "import probes; print(*probes.available())"); do
    t0=$(date +%s.%N)
    "$PY" -m probes run "$name" --preset smoke --device "$DEV" --no-progress --json "$OUT/$name.$DEV.json" \
        >>"$LOG" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    printf '%-28s exit %s  %6.1f s\n' "$name" "$rc" "$(echo "$t1 - $t0" | bc)" | tee -a "$LOG"
    [ "$rc" = 0 ] || status=1
done

say "3. benchmarks on the GPU and the CPU (not recorded: copy the numbers into bench/results/ by hand)"
for dev in $(echo "$DEV cpu" | tr ' ' '\n' | awk '!seen[$0]++'); do
    "$PY" bench/run.py --only forward train icl --device "$dev" --no-record >"$OUT/bench.$dev.json" 2>>"$LOG"
    [ $? = 0 ] || status=1
    echo "bench on $dev:" | tee -a "$LOG"
    cat "$OUT/bench.$dev.json" | tee -a "$LOG"
done
say "done (status $status); records in $OUT"
exit $status
