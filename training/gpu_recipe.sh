#!/usr/bin/env bash
# The names-and-numbers en-de model from scratch on one lent GPU, in one call of a few minutes (issue 31).
#
#   OUT=/some/dir bash training/gpu_recipe.sh            # on the GPU machine (python3 holds torch with CUDA)
#   PY=.venv/bin/python DEVICE=cpu MINUTES=0.5 CORPUS=/tmp/small.tsv.gz MAX_TOKENS=1024 OUT=/tmp/o \
#       bash training/gpu_recipe.sh                       # the same path on the CPU first, on a small corpus
#
# Two recipes train side by side on the one GPU (a model this small leaves it mostly idle), differing only in how
# many copy-augmented pairs they add (a study row); each stops after the last epoch that fits in MINUTES. The one
# with the lower validation loss is averaged over its last epochs (paper 6.1), exported in fp16 with snapshots of
# its own epochs 1, 4 and 16 ("watch attention learn"), and packed into parts of at most 15 MiB under $OUT (the
# lent machine returns at most 8 files of 16 MiB). Unpack here with: cat $OUT/ship.tgz.part-* | tar xz
set -u
PY=${PY:-python3}
DEVICE=${DEVICE:-cuda}
MINUTES=${MINUTES:-6.5}
CORPUS=${CORPUS:-data/en-de-plus2-words.tsv.gz}
MAX_TOKENS=${MAX_TOKENS:-16384}
OUT=${OUT:?set OUT to the folder whose files come back}
RUNS=${RUNS:-runs/gpu}
STAGE=$RUNS/ship
export PYTHONUNBUFFERED=1
mkdir -p "$OUT" "$RUNS"

{ date -u; nvidia-smi -L 2>/dev/null; $PY -c "import torch, sys; print(sys.version.split()[0], torch.__version__)"; } \
    >"$RUNS/device.txt" 2>&1
common=(--task en-de --corpus "$CORPUS" --tokenizer data/tokenizers/en-de-digits.model --device "$DEVICE" --bf16
        --epochs 1000 --stop-minutes "$MINUTES" --snapshot-epochs 1,2,4,8,16 --keep-epochs 5 --valid-bleu 100
        --save-every 100000 --threads 2 --warmup 3000 --lr-factor 1.0 --max-tokens "$MAX_TOKENS")
$PY -m training.train "${common[@]}" --copy-augment 2 --out "$RUNS/aug2" >"$RUNS/aug2.log" 2>&1 &
$PY -m training.train "${common[@]}" --copy-augment 4 --out "$RUNS/aug4" >"$RUNS/aug4.log" 2>&1 &
wait

pack() {  # whatever exists of the logs and the shipped model, in few files that come back
    tar czf "$OUT/logs.tgz" -C "$RUNS" --ignore-failed-read device.txt aug2.log aug4.log average.log \
        aug2/epochs.csv aug4/epochs.csv translate.log 2>/dev/null
    [ -d "$STAGE" ] && tar cf - -C "$STAGE" . | gzip -1 | split -b 15m - "$OUT/ship.tgz.part-"
    ls -la "$OUT"
}
trap pack EXIT

best=$($PY - "$RUNS" <<'EOF'
import csv, sys
from pathlib import Path
losses = {}
for run in ("aug2", "aug4"):
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
run=$RUNS/$best
$PY -m training.average "$run"/epochs/* --out "$run/avg" --corpus data/en-de.tsv.gz | tee "$RUNS/average.log"
$PY -m training.export --run "$run" --which avg --out "$STAGE/en-de"
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
