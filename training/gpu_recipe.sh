#!/usr/bin/env bash
# The names-and-numbers en-de model from scratch on one lent GPU, in one call of a few minutes (issue 31).
#
#   OUT=/some/dir bash training/gpu_recipe.sh            # on the GPU machine (python3 holds torch with CUDA)
#   PY=.venv/bin/python DEVICE=cpu MINUTES=0.5 CORPUS=/tmp/small.tsv.gz MAX_TOKENS=1024 OUT=/tmp/o \
#       bash training/gpu_recipe.sh                       # the same path on the CPU first, on a small corpus
#
# Two recipes train side by side on the one GPU (a model this small leaves it mostly idle), differing only in how
# many copy-augmented pairs they add and what share of their names is made up (a study row: VARIANTS="name=copies
# name=copies:made_up:codes[:flags] ...", --copy-augment, --copy-made-up and --copy-codes of training.train; a fourth
# field of letters: "s" --copy-subjects, He/She openings turned into names, "f" --copy-fresh, the copies drawn anew
# each epoch, "b" --bpe-dropout 0.1, the pieces sampled anew each epoch, "B" the same on the source side only, "a"
# --align-copies 0.05, the last decoder layer's first cross-attention head taught to look at the piece it copies,
# e.g. "subj=4:0.5:0.3:s", "fresh=4:0.5:0.3:f", "bpd=4:0.5:0.3:fb", "align=4:0.5:0.3:fa"); each stops
# after the last epoch that fits in MINUTES. Each is averaged over its last epochs (paper 6.1) and exported in fp16
# (so the choice can be made on the full evaluation afterwards); the one with the lower validation loss also gets
# snapshots of its own epochs 1, 4 and 16 ("watch attention learn"). All is packed into parts of at most 15 MiB under
# $OUT (the lent machine returns at most 8 files of 16 MiB). Unpack here with: cat $OUT/ship.tgz.part-* | tar xz
#
# INIT=<checkpoint> continues that model instead (the same run's lineage, so its shipped snapshots stay valid): fresh
# Adam, the schedule at the checkpoint's own step unless START_STEP says otherwise. A fifth field in a variant widens
# the model's FFNs to that many hidden units first (--widen-ff, training.grow: the same function, more capacity to
# train on), e.g. VARIANTS="mix=4:0.5:0.3 wide=4:0.5:0.3::2048". A sixth field sets the run's dropout
# (--dropout: residual, attention and FFN), e.g. "drop=4:0.5:0.3::2048:0.3" for the widened model regularised harder.
# A seventh field cools the rate down linearly to 0 over the run's last N epochs (--cooldown-epochs,
# training.schedule.cooldown); the run's end must then be known: EPOCHS=<total epochs, the checkpoint's own included>
# (e.g. EPOCHS=150 with INIT=pretrained/en-de, at epoch 126, trains 24), with MINUTES left long enough for them.
# An eighth field trains on those corpus sources only, the validation split whole (--train-sources), e.g. the test
# split's domains, as in the shipped model's last two epochs:
# "dom=4:0.5:0.3:f:::2:ding,dingwords,freeciv,libreoffice,wesnoth".
set -u
PY=${PY:-python3}
DEVICE=${DEVICE:-cuda}
MINUTES=${MINUTES:-6.5}
CORPUS=${CORPUS:-data/en-de-plus2-words.tsv.gz}
MAX_TOKENS=${MAX_TOKENS:-16384}
OUT=${OUT:?set OUT to the folder whose files come back}
RUNS=${RUNS:-runs/gpu}
VARIANTS=${VARIANTS:-aug2=2 aug4=4}
INIT=${INIT:-}
WARMUP=${WARMUP:-3000}
LR_FACTOR=${LR_FACTOR:-1.0}
EPOCHS=${EPOCHS:-1000}
STAGE=$RUNS/ship
export PYTHONUNBUFFERED=1
mkdir -p "$OUT" "$RUNS"

{ date -u; nvidia-smi -L 2>/dev/null; $PY -c "import torch, sys; print(sys.version.split()[0], torch.__version__)"; } \
    >"$RUNS/device.txt" 2>&1
common=(--task en-de --corpus "$CORPUS" --tokenizer data/tokenizers/en-de-digits.model --device "$DEVICE" --bf16
        --epochs "$EPOCHS" --stop-minutes "$MINUTES" --snapshot-epochs 1,2,4,8,16 --keep-epochs 5 --valid-bleu 100
        --save-every 100000 --threads 2 --warmup "$WARMUP" --lr-factor "$LR_FACTOR" --max-tokens "$MAX_TOKENS")
[ -n "$INIT" ] && common+=(--init-from "$INIT")
[ -n "${START_STEP:-}" ] && common+=(--start-step "$START_STEP")
for variant in $VARIANTS; do  # refused before any run starts: a cool-down needs the run's end
    IFS=: read -r _ _ _ _ _ _ cooldown _ <<<"${variant#*=}"
    if [ -n "${cooldown:-}" ] && [ "$EPOCHS" = 1000 ]; then
        echo "variant ${variant%%=*} cools down over its last $cooldown epoch(s): set EPOCHS, where the run ends"
        exit 2
    fi
done
names=()
for variant in $VARIANTS; do
    name=${variant%%=*}
    names+=("$name")
    spec=${variant#*=}
    IFS=: read -r copies made_up codes subjects widen dropout cooldown sources <<<"$spec"
    extra=()
    [[ "${subjects:-}" == *s* ]] && extra+=(--copy-subjects)
    [[ "${subjects:-}" == *f* ]] && extra+=(--copy-fresh)
    [[ "${subjects:-}" == *b* ]] && extra+=(--bpe-dropout 0.1)
    [[ "${subjects:-}" == *B* ]] && extra+=(--bpe-dropout 0.1 --bpe-dropout-sides source)
    [[ "${subjects:-}" == *a* ]] && extra+=(--align-copies 0.05)
    [ -n "${widen:-}" ] && extra+=(--widen-ff "$widen")
    [ -n "${dropout:-}" ] && extra+=(--dropout "$dropout")
    [ -n "${cooldown:-}" ] && extra+=(--cooldown-epochs "$cooldown")
    [ -n "${sources:-}" ] && extra+=(--train-sources "$sources")
    $PY -m training.train "${common[@]}" --copy-augment "$copies" --copy-made-up "${made_up:-0}" \
        --copy-codes "${codes:-0}" "${extra[@]}" --out "$RUNS/$name" \
        >"$RUNS/$name.log" 2>&1 &
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
