#!/usr/bin/env python3
"""bench/race_torch.py: the Optuna + PyTorch side of bench/race.sh, written the way a careful user
writes it: the data as uint8 tensors resident on the GPU, augmentation drawn on the GPU, bf16
autocast, channels_last, cuDNN autotuning, optionally torch.compile. Optuna's TPESampler proposes,
its HyperbandPruner stops trials from the validation accuracy each epoch reports.

Everything that makes the race fair comes from Hone itself, from the JSON of `hone --json
experiment automl-defaults EXP` (--defaults):
  - "spec": the experiment's resolved default spec (network, data split sizes, optimiser, schedule,
    augmentation, math): the base of every trial;
  - "default_hyperparameters": the space Hone's AutoML sweeps by default (types, ranges, log,
    int steps, "condition"s on a categorical or bool parent): the space Optuna sweeps here.
The network is spec/spec_layers.c's ResNet for small images (3x3 stride-1 stem, no pool; BasicBlocks
[2,2,2,2] or [3,4,6,3] of widths w, 2w, 4w, 8w; 1x1 projections; the last BN of each block starting
at gamma 0; global average pooling, dropout, dense), He-normal initialisation as train/net.c; the
data split as train/dataset.c (IDX: the first train_limit images of the training file for
training, its last val_size for validation, the first test_limit test images); normalisation by
the training part's mean and deviation; augmentation as kernels/backend.h describes it (crop with
zero padding, flip, jitter's contrast and brightness for grey images, cutout to 0 after
normalisation); SGD (L2 on weights only, Nesterov) or AdamW (decoupled decay on weights only);
linear warmup then cosine, step or constant per step, as train/loop.c's lr_at; the last partial
batch dropped; label smoothing when the spec has it.

The wall-clock budget counts from --start-time (race.sh passes the moment it started this
process, so Python's and CUDA's start-up count) and is kept inside a trial too: Optuna's own
timeout only stops between trials, so a trial that would run past the deadline is cut (and not
counted, as a budget-cut trial of Hone's is not its best). The best finished trial's weights stay
in memory and are evaluated once on the test images at the end. Prints progress on stderr and one
JSON line on stdout (and into --out).
"""
import argparse
import contextlib
import gzip
import json
import math
import os
import struct
import sys
import threading
import time

T_IMPORT = time.time()

try:
    import numpy as np
    import optuna
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:  # pragma: no cover
    print(json.dumps({"side": "optuna-torch", "error": f"missing Python package: {e}"}))
    sys.exit(3)

# Spec keys this side implements; a swept key outside it is refused (the race would not be fair).
KNOWN = {
    "network", "train.epochs", "train.batch_size", "train.optimizer", "train.lr", "train.momentum",
    "train.nesterov", "train.weight_decay", "train.beta1", "train.beta2", "train.eps",
    "train.lr_schedule", "train.warmup_epochs", "train.step_epochs", "train.step_gamma",
    "train.min_lr", "train.seed", "train.label_smoothing", "model.width", "model.dropout",
    "augment.flip", "augment.crop_padding", "augment.jitter", "augment.cutout",
}
BLOCKS = {"resnet18": [2, 2, 2, 2], "resnet34": [3, 4, 6, 3]}


def log(msg):
    print(f"race_torch: {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- data (train/dataset.c's split)

def read_idx(path):
    for p in (path, path + ".gz"):
        if os.path.exists(p):
            with (gzip.open(p, "rb") if p.endswith(".gz") else open(p, "rb")) as f:
                buf = f.read()
            break
    else:
        raise SystemExit(f"race_torch: {path}(.gz) not found")
    magic, = struct.unpack_from(">I", buf, 0)
    nd = magic & 0xFF
    dims = struct.unpack_from(">" + "I" * nd, buf, 4)
    return np.frombuffer(buf, np.uint8, int(np.prod(dims)), 4 + 4 * nd).reshape(dims)


def load_data(folder, spec, device):
    xtr = read_idx(os.path.join(folder, "train-images-idx3-ubyte"))
    ytr = read_idx(os.path.join(folder, "train-labels-idx1-ubyte"))
    xte = read_idx(os.path.join(folder, "t10k-images-idx3-ubyte"))
    yte = read_idx(os.path.join(folder, "t10k-labels-idx1-ubyte"))
    total, nval = xtr.shape[0], int(spec["data.val_size"])
    ntrain = total - nval
    if 0 < int(spec.get("data.train_limit", 0)) < ntrain:
        ntrain = int(spec["data.train_limit"])
    ntest = xte.shape[0]
    if 0 < int(spec.get("data.test_limit", 0)) < ntest:
        ntest = int(spec["data.test_limit"])
    classes = int(max(ytr.max(), yte.max())) + 1
    f = xtr[:ntrain].astype(np.float64) / 255.0
    mean, std = float(f.mean()), float(f.std())  # numpy's std: the population's, as dataset.c
    std = std if std > 1e-6 else 1.0

    def dev(x, y):
        return (torch.from_numpy(np.array(x)).to(device),
                torch.from_numpy(y.astype(np.int64)).to(device))

    parts = {"train": dev(xtr[:ntrain], ytr[:ntrain]),
             "val": dev(xtr[total - nval:], ytr[total - nval:]),
             "test": dev(xte[:ntest], yte[:ntest])}
    return parts, classes, mean, std


def augment(x, cfg, mean, std, gen):
    """x: uint8 [n, h, w] -> normalised float [n, 1, h, w], kernels/backend.h's augmentation."""
    n, h, w = x.shape
    dev = x.device
    v = x.float() * (1.0 / 255.0)
    pad = int(cfg["augment.crop_padding"])
    flip = bool(cfg["augment.flip"])
    if pad > 0 or flip:
        dy = torch.randint(-pad, pad + 1, (n,), device=dev, generator=gen) if pad else None
        dx = torch.randint(-pad, pad + 1, (n,), device=dev, generator=gen) if pad else None
        ys = torch.arange(h, device=dev)[None, :].expand(n, h)
        xs = torch.arange(w, device=dev)[None, :].expand(n, w)
        if pad:
            ys = ys - dy[:, None]
            xs = xs - dx[:, None]
        if flip:
            f = torch.rand(n, device=dev, generator=gen) < 0.5
            xs = torch.where(f[:, None], w - 1 - xs, xs)
        inside = ((ys >= 0) & (ys < h))[:, :, None] & ((xs >= 0) & (xs < w))[:, None, :]
        src = ys.clamp(0, h - 1)[:, :, None] * w + xs.clamp(0, w - 1)[:, None, :]
        v = torch.gather(v.reshape(n, h * w), 1, src.reshape(n, h * w)).reshape(n, h, w)
        v = v * inside
    j = float(cfg["augment.jitter"])
    if j > 0:  # grey images: contrast about the image's mean, then brightness, each clamped
        a = (1.0 - j) + (2.0 * j) * torch.rand(n, 2, device=dev, generator=gen)
        m = v.mean(dim=(1, 2), keepdim=True)
        v = (m + a[:, 1, None, None] * (v - m)).clamp(0, 1)
        v = (v * a[:, 0, None, None]).clamp(0, 1)
    v = (v - mean) * (1.0 / std)
    s = int(cfg["augment.cutout"])
    if s > 0:
        cy = torch.randint(0, h, (n,), device=dev, generator=gen) - s // 2
        cx = torch.randint(0, w, (n,), device=dev, generator=gen) - s // 2
        r = torch.arange(h, device=dev)[None, :]
        c = torch.arange(w, device=dev)[None, :]
        iny = (r >= cy[:, None]) & (r < cy[:, None] + s)
        inx = (c >= cx[:, None]) & (c < cx[:, None] + s)
        v = v.masked_fill(iny[:, :, None] & inx[:, None, :], 0.0)
    return v[:, None]


# ---------------------------------------------------------------- the network (spec_layers.c)

class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        nn.init.zeros_(self.b2.weight)  # each block starts as the identity
        self.proj = None
        if stride != 1 or cin != cout:
            self.proj = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, 0, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.b2(self.c2(F.relu(self.b1(self.c1(x)))))
        return F.relu(y + (self.proj(x) if self.proj is not None else x))


class ResNet(nn.Module):
    def __init__(self, network, width, dropout, cin, classes):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(cin, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width),
                                  nn.ReLU())
        layers, c = [], width
        for s, nb in enumerate(BLOCKS[network]):
            for i in range(nb):
                layers.append(Block(c, width << s, 2 if s > 0 and i == 0 else 1))
                c = width << s
        self.blocks = nn.Sequential(*layers)
        self.drop = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        self.fc = nn.Linear(c, classes)
        for m in self.modules():  # He-normal on fan-in, biases 0 (train/net.c)
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="relu")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(self.drop(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)))


def lr_at(cfg, steps, step):
    """train/loop.c's lr_at: linear warmup, then cosine, step or constant."""
    base, total = float(cfg["train.lr"]), float(cfg["train.epochs"]) * steps
    warm = float(cfg["train.warmup_epochs"]) * steps
    if step < warm:
        return base * (step + 1) / warm
    sched = cfg["train.lr_schedule"]
    if sched == "step":
        return base * float(cfg["train.step_gamma"]) ** ((step // steps) // int(cfg["train.step_epochs"]))
    if sched == "cosine":
        prog = min((step - warm) / (total - warm), 1.0) if total > warm else 1.0
        lo = float(cfg["train.min_lr"])
        return lo + (base - lo) * 0.5 * (1.0 + math.cos(math.pi * prog))
    return base


# ---------------------------------------------------------------- the space (Hone's, in Optuna)

def order_space(space):
    """Parameters with their parents first (a condition names a categorical or bool parent)."""
    done, out = set(), []

    def visit(name, stack):
        if name in done:
            return
        if name in stack:
            raise SystemExit(f"race_torch: the space's conditions form a cycle at {name}")
        for parent in (space[name].get("condition") or {}):
            if parent not in space:
                raise SystemExit(f"race_torch: {name}'s condition names {parent}, not in the space")
            visit(parent, stack | {name})
        done.add(name)
        out.append(name)

    for name in space:
        visit(name, set())
    return out


def suggest(trial, name, p):
    t = p["type"]
    if t == "float":
        return trial.suggest_float(name, float(p["min"]), float(p["max"]), log=bool(p.get("log")))
    if t == "int":
        lo, hi, step = int(p["min"]), int(p["max"]), int(p.get("step") or 1)
        if step > 1 and p.get("log") and lo % step == 0 and lo > 0:
            # Optuna takes no log scale with a step: a log-scaled multiple of the step instead
            # (the same grid: min + k * step)
            return trial.suggest_int(name + "/" + str(step), lo // step, hi // step, log=True) * step
        if step > 1:
            return trial.suggest_int(name, lo, lo + (hi - lo) // step * step, step=step)
        return trial.suggest_int(name, lo, hi, log=bool(p.get("log")))
    if t == "categorical":
        return trial.suggest_categorical(name, list(p["values"]))
    if t == "bool":
        return trial.suggest_categorical(name, [False, True])
    raise SystemExit(f"race_torch: parameter {name}: unknown type {t}")


def enqueue_value(name, p, value):
    """The Optuna parameter (name, value) that suggest() turns into the given value."""
    step = int(p.get("step") or 1)
    if p["type"] == "int" and step > 1 and p.get("log") and int(p["min"]) % step == 0 and int(p["min"]) > 0:
        return name + "/" + str(step), int(value) // step
    if p["type"] == "int":
        return name, int(value)
    return name, value


def active(p, cfg, act):
    """A parameter is active when each parent its condition names is active and holds one of the
    values listed (search/space.c's rule; act: the active parameters so far, parents first)."""
    return all(parent in act and cfg.get(parent) in vals
               for parent, vals in (p.get("condition") or {}).items())


# ---------------------------------------------------------------- training

class Race:
    def __init__(self, args, defaults):
        self.args = args
        self.spec = dict(defaults["spec"])
        self.space = dict(defaults.get("default_hyperparameters") or {})
        if args.space_json:
            self.space = json.loads(args.space_json)
        unknown = sorted(k for k in self.space if k not in KNOWN)
        if unknown:
            raise SystemExit("race_torch: Hone sweeps keys this side does not implement: "
                             + ", ".join(unknown) + " (add them to bench/race_torch.py)")
        self.order = order_space(self.space)
        self.device = torch.device(args.device)
        self.cuda = self.device.type == "cuda"
        net = self.spec.get("network")
        if net not in BLOCKS:
            raise SystemExit(f"race_torch: network {net}: only resnet18 and resnet34 race")
        if int(self.spec.get("model.input_size") or 0) not in (0, 28):
            raise SystemExit("race_torch: model.input_size must be the data's own (IDX is not resized)")
        math_ = self.spec.get("train.math", "fp32")
        self.amp = self.cuda and math_ == "bf16"
        if self.cuda:
            torch.backends.cudnn.benchmark = True
            tf32 = math_ in ("tf32", "bf16")
            torch.backends.cuda.matmul.allow_tf32 = tf32
            torch.backends.cudnn.allow_tf32 = tf32
        t = time.time()
        self.parts, self.classes, self.mean, self.std = load_data(args.data, self.spec, self.device)
        if self.cuda:
            torch.cuda.synchronize()  # the data in place before trials on other streams read it
        log(f"data: {self.parts['train'][0].shape[0]} train, {self.parts['val'][0].shape[0]} val, "
            f"{self.parts['test'][0].shape[0]} test images on {self.device} ({time.time() - t:.1f} s)")
        self.deadline = args.start_time + args.budget_s
        self.eval_s = 0.0  # the last validation pass's seconds: the test pass is reserved from it
        self.best = None  # (value, trial number, config, state_dict, epochs, active swept params)
        self.epochs = 0  # whole epochs trained, every trial
        self.cut = 0  # trials cut by the deadline
        self.first_step_at = None
        self.step_s = 0.0
        self.lock = threading.Lock()  # --jobs N: trials in threads share the counts and the best

    def config(self, trial):
        """The trial's spec and its active swept parameters (the others keep the spec's value)."""
        cfg, act = dict(self.spec), []
        for name in self.order:
            p = self.space[name]
            if active(p, cfg, act):
                cfg[name] = suggest(trial, name, p)
                act.append(name)
        return cfg, act

    def max_epochs(self):
        if self.args.max_epochs:
            return self.args.max_epochs
        if "train.epochs" in self.space:
            return int(self.space["train.epochs"]["max"])
        return int(self.spec["train.epochs"])

    def left(self):
        n_test = self.parts["test"][0].shape[0]
        n_val = max(1, self.parts["val"][0].shape[0])
        reserve = 1.0 + 2.0 * self.eval_s * n_test / n_val  # the test pass, with a model to build
        return self.deadline - reserve - time.time()

    def build(self, cfg):
        torch.manual_seed(int(cfg["train.seed"]))
        m = ResNet(cfg["network"], int(cfg["model.width"]), float(cfg["model.dropout"]), 1,
                   self.classes).to(self.device)
        if self.cuda:
            m = m.to(memory_format=torch.channels_last)
        return m

    def forward(self, model, x):
        if self.cuda:
            x = x.contiguous(memory_format=torch.channels_last)
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.amp):
            return model(x)

    def evaluate(self, model, part):
        x, y = self.parts[part]
        model.eval()
        correct = 0
        with torch.no_grad():
            for i in range(0, x.shape[0], 1000):
                xb = ((x[i:i + 1000].float() * (1.0 / 255.0) - self.mean) * (1.0 / self.std))[:, None]
                correct += (self.forward(model, xb).argmax(1) == y[i:i + 1000]).sum().item()
        return correct / max(1, x.shape[0])

    def objective(self, trial):
        """One trial; with --jobs N on the GPU each trial's work goes on a stream of its own, so the
        trials in flight overlap on the GPU as Hone's packed ones do."""
        stream = self.cuda and self.args.jobs > 1
        with torch.cuda.stream(torch.cuda.Stream()) if stream else contextlib.nullcontext():
            return self.trial(trial)

    def trial(self, trial):
        cfg, act = self.config(trial)
        if self.left() <= 0:
            self.cut_trial(trial, 0)
        epochs = int(cfg["train.epochs"]) if "train.epochs" in self.space else self.max_epochs()
        cfg["train.epochs"] = epochs
        model = self.build(cfg)
        decay = [p for p in model.parameters() if p.ndim > 1]
        rest = [p for p in model.parameters() if p.ndim <= 1]
        wd = float(cfg["train.weight_decay"])
        groups = [{"params": decay, "weight_decay": wd}, {"params": rest, "weight_decay": 0.0}]
        if cfg["train.optimizer"] == "adamw":
            kind, kw = torch.optim.AdamW, dict(betas=(float(cfg["train.beta1"]), float(cfg["train.beta2"])),
                                               eps=float(cfg["train.eps"]))
        else:
            mu = float(cfg["train.momentum"])
            kind, kw = torch.optim.SGD, dict(momentum=mu, nesterov=bool(cfg["train.nesterov"]) and mu > 0)
        try:  # the fused CUDA step where this PyTorch has it (one kernel for all the parameters)
            opt = kind(groups, lr=float(cfg["train.lr"]), fused=self.cuda or None, **kw)
        except (TypeError, RuntimeError, ValueError):
            opt = kind(groups, lr=float(cfg["train.lr"]), **kw)
        fwd = model
        if self.args.compile and hasattr(torch, "compile"):
            fwd = torch.compile(model)
        xtr, ytr = self.parts["train"]
        n, batch = xtr.shape[0], int(cfg["train.batch_size"])
        steps = n // batch
        if steps < 1:
            raise optuna.TrialPruned(f"batch {batch} above the {n} training images")
        ls = float(cfg.get("train.label_smoothing", 0.0) or 0.0)
        gen = torch.Generator(device=self.device)
        gen.manual_seed(int(cfg["train.seed"]) * 1000003 + trial.number)
        shown = {k: v for k, v in trial.params.items()}
        log(f"trial {trial.number}: {epochs} epochs, {json.dumps(shown)}")
        step, val = 0, float("nan")
        # the slowest recent step, as a margin (the last trial's until this one has its own)
        step_s, t_last = self.step_s, time.time()
        for e in range(epochs):
            model.train()
            perm = torch.randperm(n, device=self.device, generator=gen)
            for s in range(steps):
                now = time.time()
                if step > 0:
                    step_s = max(0.9 * step_s, now - t_last)
                    self.step_s = step_s
                t_last = now
                # this step, and the validation pass where it ends the epoch, must fit
                if self.left() < step_s + (self.eval_s if s == steps - 1 else 0.0):
                    self.cut_trial(trial, e)
                lr = lr_at(cfg, steps, step)
                for g in opt.param_groups:
                    g["lr"] = lr
                idx = perm[s * batch:(s + 1) * batch]
                xb = augment(xtr[idx], cfg, self.mean, self.std, gen)
                out = self.forward(fwd, xb)
                loss = F.cross_entropy(out.float(), ytr[idx], label_smoothing=ls)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                step += 1
                if self.first_step_at is None:
                    self.first_step_at = time.time()
            if self.left() < self.eval_s:
                self.cut_trial(trial, e)
            t = time.time()
            val = self.evaluate(fwd, "val")
            self.eval_s = time.time() - t
            with self.lock:
                self.epochs += 1
            trial.report(val, e + 1)
            if not math.isfinite(loss.item()):
                raise optuna.TrialPruned("the loss diverged")
            if trial.should_prune():
                log(f"trial {trial.number}: pruned after epoch {e + 1}, val {val:.4f}")
                raise optuna.TrialPruned()
        log(f"trial {trial.number}: done, val {val:.4f}")
        with self.lock:
            if self.best is None or val > self.best[0]:
                state = {k: v.detach().clone() for k, v in model.state_dict().items()}
                if self.cuda:
                    torch.cuda.current_stream().synchronize()  # the copy done before others read it
                swept = {k: cfg[k] for k in act}
                self.best = (val, trial.number, cfg, state, epochs, swept)
        return val

    def cut_trial(self, trial, epoch):
        with self.lock:
            self.cut += 1
        trial.study.stop()
        log(f"trial {trial.number}: cut by the deadline in epoch {epoch + 1}")
        raise optuna.TrialPruned("the budget's deadline")

    def run(self):
        sampler = optuna.samplers.TPESampler(seed=self.args.seed)
        me = self.max_epochs()
        pruner = optuna.pruners.HyperbandPruner(min_resource=1, max_resource=me,
                                                reduction_factor=self.args.eta)
        study = optuna.create_study(direction="maximize", sampler=sampler, pruner=pruner)
        if not self.args.no_default_trial:  # Hone's search runs its default spec as one trial
            first, cfg, act = {}, dict(self.spec), []
            for name in self.order:
                p = self.space[name]
                value = self.spec.get(name, p.get("default"))
                if value is not None and active(p, cfg, act):
                    cfg[name] = value
                    act.append(name)
                    k, v = enqueue_value(name, p, value)
                    first[k] = v
            study.enqueue_trial(first)
        left = self.left()
        if left > 0:
            study.optimize(self.objective, timeout=left, n_jobs=self.args.jobs, gc_after_trial=False)
        if self.cuda:
            torch.cuda.synchronize()
        return study

    def test(self):
        if self.best is None:
            return None
        val, number, cfg, state, epochs, swept = self.best
        model = self.build(cfg)
        model.load_state_dict(state)
        return self.evaluate(model, "test")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--defaults", required=True, help="hone --json experiment automl-defaults EXP")
    ap.add_argument("--data", required=True, help="the Fashion-MNIST IDX folder")
    ap.add_argument("--budget-s", type=float, required=True, help="wall-clock budget in seconds")
    ap.add_argument("--start-time", type=float, default=None,
                    help="the budget's start (Unix seconds; default: this process's start)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--max-epochs", type=int, default=0,
                    help="epochs of a trial that is not pruned (default: the spec's train.epochs, "
                         "or the top of train.epochs' range when it is swept)")
    ap.add_argument("--eta", type=int, default=3, help="HyperbandPruner's reduction factor")
    ap.add_argument("--seed", type=int, default=1, help="TPE's seed")
    ap.add_argument("--compile", action="store_true", help="torch.compile each trial's model")
    ap.add_argument("--jobs", type=int, default=1,
                    help="trials at once (Optuna's n_jobs threads; on the GPU a CUDA stream each)")
    ap.add_argument("--no-default-trial", action="store_true",
                    help="do not enqueue the default spec as the first trial")
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (torch.set_num_threads)")
    ap.add_argument("--space-json", default="", help="a space to sweep instead of Hone's default")
    ap.add_argument("--out", default="", help="also write the JSON line here")
    args = ap.parse_args()
    if args.start_time is None:
        args.start_time = T_IMPORT
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with open(args.defaults) as f:
        defaults = json.load(f)
    race = Race(args, defaults)
    study = race.run()
    test = race.test()
    end = time.time()
    states = [t.state for t in study.trials]
    C = optuna.trial.TrialState
    b = race.best
    res = {
        "side": "optuna-torch",
        "budget_s": round(args.budget_s, 1),
        "wall_s": round(end - args.start_time, 1),
        "startup_s": round((race.first_step_at or end) - args.start_time, 1),
        "best_val_accuracy": round(b[0], 6) if b else None,
        "test_accuracy": round(test, 6) if test is not None else None,
        "trials": len(study.trials),
        "trials_complete": sum(s == C.COMPLETE for s in states),
        "trials_pruned": sum(s == C.PRUNED for s in states) - race.cut,
        "trials_cut": race.cut,
        "epochs": race.epochs,
        "best_trial": b[1] if b else None,
        "best_epochs": b[4] if b else None,
        "best_config": b[5] if b else None,
        "max_epochs": race.max_epochs(),
        "network": race.spec["network"],
        "math": race.spec.get("train.math"),
        "compile": bool(args.compile and hasattr(torch, "compile")),
        "jobs": args.jobs,
        "torch": torch.__version__,
        "optuna": optuna.__version__,
        "torch_device": torch.cuda.get_device_name(0) if race.cuda else "cpu",
    }
    line = json.dumps(res)
    print(line, flush=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write(line + "\n")
    return 0 if test is not None else 1


if __name__ == "__main__":
    sys.exit(main())
