#!/bin/sh
# tests/train/cli_test.sh: the hone-train command-line contract: spec errors exit 2 naming the key,
# one JSON line per epoch on stdout, --epochs-until pauses (exit 0, checkpoint kept), --resume
# continues to the same final line as an uninterrupted run, artifacts land in --out.
set -u
BIN=${1:?usage: cli_test.sh path/to/hone-train}
DIR=$(mktemp -d /tmp/hone-train-cli-XXXXXX)
trap 'rm -rf "$DIR"' EXIT
fail() { echo "cli_test: $*" >&2; exit 1; }
SMALL="--device cpu --threads 2 --set data.train_limit=512 --set data.val_size=500 \
--set data.test_limit=500 --set train.epochs=2 --set model.hidden=32 --set train.batch_size=64"

cat > "$DIR/spec.yaml" <<'YAML'
network: mlp
train: {optimizer: sgd, lr: 0.05, momentum: 0.9, lr_schedule: cosine, seed: 7}
model: {dropout: 0.1}
YAML

"$BIN" --spec "$DIR/spec.yaml" --set train.lr=fast >/dev/null 2>"$DIR/err"
[ $? -eq 2 ] || fail "bad value: want exit 2"
grep -q "train.lr" "$DIR/err" || fail "bad value: message does not name train.lr: $(cat "$DIR/err")"
"$BIN" --set model.widht=3 >/dev/null 2>"$DIR/err"
[ $? -eq 2 ] || fail "unknown key: want exit 2"
grep -q "model.widht: unknown key" "$DIR/err" || fail "unknown key message: $(cat "$DIR/err")"
printf 'train:\n  epochs: many\n' > "$DIR/bad.yaml"
"$BIN" --spec "$DIR/bad.yaml" >/dev/null 2>"$DIR/err"
[ $? -eq 2 ] || fail "bad spec file: want exit 2"
grep -q "train.epochs" "$DIR/err" || fail "bad spec file message: $(cat "$DIR/err")"
"$BIN" --bogus 1 >/dev/null 2>&1
[ $? -eq 2 ] || fail "unknown option: want exit 2"

# uninterrupted
"$BIN" --spec "$DIR/spec.yaml" $SMALL --out "$DIR/full" >"$DIR/full.out" 2>"$DIR/full.err" ||
    fail "full run failed: $(cat "$DIR/full.err")"
[ "$(wc -l < "$DIR/full.out")" -eq 3 ] || fail "want 2 epoch lines + done: $(cat "$DIR/full.out")"
grep -q '^{"epoch":1,"epochs":2,"train_loss":' "$DIR/full.out" || fail "epoch line format"
grep -q '"images_per_second":' "$DIR/full.out" || fail "no images_per_second"
tail -n 1 "$DIR/full.out" | grep -q '^{"event":"done","test_accuracy":0\.[0-9]*,' ||
    fail "done line: $(tail -n 1 "$DIR/full.out")"
for f in model.bin spec.yaml metrics.jsonl checkpoint.bin; do
    [ -s "$DIR/full/$f" ] || fail "missing artifact $f"
done
cmp -s "$DIR/full.out" "$DIR/full/metrics.jsonl" || true
grep -q 'seed: 7' "$DIR/full/spec.yaml" || fail "resolved spec lacks the spec file's values"
grep -q 'train_limit: 512' "$DIR/full/spec.yaml" || fail "resolved spec lacks the --set values"

# paused after epoch 1, then resumed
"$BIN" --spec "$DIR/spec.yaml" $SMALL --out "$DIR/part" --epochs-until 1 >"$DIR/p1.out" 2>"$DIR/p1.err" ||
    fail "paused run failed: $(cat "$DIR/p1.err")"
grep -q '"event":"paused","epochs_trained":1' "$DIR/p1.out" || fail "no paused line: $(cat "$DIR/p1.out")"
[ -s "$DIR/part/checkpoint.bin" ] || fail "paused run left no checkpoint"
[ ! -e "$DIR/part/model.bin" ] || fail "paused run should not write model.bin"
"$BIN" --spec "$DIR/spec.yaml" $SMALL --out "$DIR/part" --resume auto >"$DIR/p2.out" 2>"$DIR/p2.err" ||
    fail "resumed run failed: $(cat "$DIR/p2.err")"
grep -q '^{"epoch":2,' "$DIR/p2.out" || fail "resume did not start at epoch 2: $(cat "$DIR/p2.out")"
grep -q '^{"epoch":1,' "$DIR/p2.out" && fail "resume repeated epoch 1"
# same numbers as the uninterrupted run (seconds and speed differ)
strip() { sed -e 's/"seconds":[^,]*,//' -e 's/"images_per_second":[^}]*//' "$1"; }
strip "$DIR/p2.out" > "$DIR/a"
strip "$DIR/full.out" | tail -n 2 > "$DIR/b"
cmp -s "$DIR/a" "$DIR/b" || fail "resumed run differs: $(cat "$DIR/a") vs $(cat "$DIR/b")"
cmp -s "$DIR/full/model.bin" "$DIR/part/model.bin" || fail "model.bin differs after resume"
echo "cli_test: ok"
