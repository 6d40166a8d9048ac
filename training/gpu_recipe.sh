#!/usr/bin/env bash
# The names-and-numbers en-de model on one lent GPU, in one call of a few minutes (issue 31): recipes side by side.
#
#   OUT=/some/dir bash training/gpu_recipe.sh            # on the GPU machine (python3 holds torch with CUDA)
#   PY=.venv/bin/python DEVICE=cpu MINUTES=0.5 CORPUS=/tmp/small.tsv.gz MAX_TOKENS=1024 OUT=/tmp/o \
#       bash training/gpu_recipe.sh                       # the same path on the CPU first, on a small corpus
#
# VARIANTS names recipes of training/recipes/ (default: "lineage-01-scratch study-scratch-copies4", the shipped model's
# first stage and the study row beside it). Each trains as
#   python -m training.train --recipe NAME --set device=$DEVICE stop_minutes=$MINUTES out=$RUNS/NAME [overrides]
# all side by side on the one GPU (a model this small leaves it mostly idle); each stops after the last epoch that
# fits in MINUTES, or at its recipe's epochs. Each is averaged over its last epochs (paper 6.1) and exported in fp16
# (so the choice can be made on the full evaluation afterwards); the one with the lower validation loss also gets
# snapshots of its own epochs 1, 4 and 16 ("watch attention learn"). All is packed into parts of at most 15 MiB under
# $OUT (the lent machine returns at most 8 files of 16 MiB). Unpack here with: cat $OUT/ship.tgz.part-* | tar xz
#
# Overrides, each applied to every recipe with --set only when given: INIT=<checkpoint> continues that model instead
# (init_from: fresh Adam, the schedule at the checkpoint's own step unless START_STEP says otherwise; e.g.
# INIT=pretrained/en-de VARIANTS="study-domains-factor04 study-domains-copy-subjects"), START_STEP, EPOCHS (where the
# run ends, the checkpoint's own epochs included: a recipe's cool-down falls over the last cooldown_epochs of them),
# CORPUS, MAX_TOKENS, WARMUP, LR_FACTOR, and SET for any other settings ("key=value ...", e.g. SET="bf16=false").
# Every recipe is checked with its overrides (python -m training.flags) before any run starts.
set -u
PY=${PY:-python3}
DEVICE=${DEVICE:-cuda}
MINUTES=${MINUTES:-6.5}
OUT=${OUT:?set OUT to the folder whose files come back}
RUNS=${RUNS:-runs/gpu}
VARIANTS=${VARIANTS:-lineage-01-scratch study-scratch-copies4}
STAGE=$RUNS/ship
export PYTHONUNBUFFERED=1
mkdir -p "$OUT" "$RUNS"

{ date -u; nvidia-smi -L 2>/dev/null; $PY -c "import torch, sys; print(sys.version.split()[0], torch.__version__)"; } \
    >"$RUNS/device.txt" 2>&1
overrides=("device=$DEVICE" "stop_minutes=$MINUTES")
[ -n "${INIT:-}" ] && overrides+=("init_from=$INIT")
[ -n "${START_STEP:-}" ] && overrides+=("start_step=$START_STEP")
[ -n "${EPOCHS:-}" ] && overrides+=("epochs=$EPOCHS")
[ -n "${CORPUS:-}" ] && overrides+=("corpus=$CORPUS")
[ -n "${MAX_TOKENS:-}" ] && overrides+=("max_tokens=$MAX_TOKENS")
[ -n "${WARMUP:-}" ] && overrides+=("warmup=$WARMUP")
[ -n "${LR_FACTOR:-}" ] && overrides+=("lr_factor=$LR_FACTOR")
read -r -a extra <<<"${SET:-}"
overrides+=("${extra[@]}")
for name in $VARIANTS; do  # refused before any run starts: a name that is no recipe, or settings no run can use
    if [[ "$name" == *=* ]]; then
        echo "VARIANTS names recipes of training/recipes (e.g. lineage-01-scratch), not ${name%%=*}'s colon-encoded flags"
        exit 2
    fi
    $PY -m training.flags --recipe "$name" --set "${overrides[@]}" "out=$RUNS/$name" >/dev/null || exit 2
done
names=()
for name in $VARIANTS; do
    names+=("$name")
    $PY -m training.train --recipe "$name" --set "${overrides[@]}" "out=$RUNS/$name" >"$RUNS/$name.log" 2>&1 &
done
wait

pack() {  # whatever exists of the logs and the shipped model, in few files that come back
    tar czf "$OUT/logs.tgz" -C "$RUNS" --ignore-failed-read device.txt average.log translate.log \
        "${names[@]/%/.log}" "${names[@]/%//epochs.csv}" 2>/dev/null
    [ -d "$STAGE" ] && tar cf - -C "$STAGE" . | gzip -1 | split -b 15m - "$OUT/ship.tgz.part-"
    ls -la "$OUT"
}
trap pack EXIT

best=$($PY - "$RUNS" "${names[@]}" <<'EOF'
import csv, sys
from pathlib import Path
losses = {}
for run in sys.argv[2:]:
    path = Path(sys.argv[1]) / run / "epochs.csv"
    if path.exists():
        rows = list(csv.DictReader(path.open()))
        if rows:
            losses[run] = float(rows[-1]["valid_loss"])
            print(f"{run}: {len(rows)} epochs, last valid loss {losses[run]}", file=sys.stderr)
print(min(losses, key=losses.get) if losses else "")
EOF
)
[ -n "$best" ] || { echo "no run finished an epoch"; tail -5 "$RUNS"/*.log; exit 1; }
echo "best: $best"
for name in "${names[@]}"; do  # every variant's average comes back: the full evaluation may prefer the other
    [ -d "$RUNS/$name/epochs" ] || continue
    $PY -m training.average "$RUNS/$name"/epochs/* --out "$RUNS/$name/avg" --corpus data/en-de.tsv.gz \
        | tee -a "$RUNS/average.log"
    [ "$name" = "$best" ] && dest=en-de || dest=$name
    $PY -m training.export --run "$RUNS/$name" --which avg --out "$STAGE/$dest"
done
run=$RUNS/$best
for epoch in 1 4 16; do
    [ -d "$run/snapshots/$epoch" ] || continue
    $PY -m training.export --run "$run" --which "snapshots/$epoch" --out "$STAGE/en-de/snapshots/epoch-$(printf %02d "$epoch")" \
        --snapshot "Epoch $epoch of the shipped run"
done
# The shipped model on this device and on the CPU: the same pieces (the app runs on either).
text="On 14 March 2023, Dr. Anna Schmidt paid 1,250 euros for 3 tickets to Berlin."
for device in "$DEVICE" cpu; do
    $PY -m model translate "$text" --checkpoint "$STAGE/en-de" --beam 4 --device "$device"
done >"$RUNS/translate.log" 2>&1
