#!/usr/bin/env python3
"""bench/train_resnet_torch.py: the PyTorch side of bench/train_resnet.sh. ResNet-18 (torchvision's
BasicBlock network with the small-image stem Hone uses at 32x32: 3x3 stride-1 conv, no max-pool)
trained on a packed dataset file (data/data.h's format, read here with numpy), data resident on the GPU
as uint8, normalised with the training part's per-channel mean and deviation, random crop with 4 pixels
of zero padding and horizontal flips drawn on the GPU, SGD momentum 0.9 (Nesterov), weight decay 5e-4,
cosine learning rate, last partial batch dropped: what hone-train does for network=resnet18.
bf16 autocast and channels_last; modes: eager and torch.compile (default mode).
Prints one RESULT line per mode, in the format of bench/train_resnet.sh."""
import argparse
import math
import statistics
import struct
import sys
import time

try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import torchvision
except ImportError as e:  # pragma: no cover
    print(f"train_resnet_torch: skipped, PyTorch missing ({e})")
    sys.exit(0)


def read_pack(path):
    """(pixels uint8 [n,h,w,c], labels int32 [n], splits (train, val, test), classes)."""
    with open(path, "rb") as f:
        buf = f.read()
    if buf[:8] != b"HONEPAK\0":
        raise SystemExit(f"{path}: not a packed dataset")
    n, = struct.unpack_from("<Q", buf, 16)
    h, w, c, classes = struct.unpack_from("<4I", buf, 24)
    splits = struct.unpack_from("<3Q", buf, 40)
    pix_off, lab_off = struct.unpack_from("<2Q", buf, 64)
    x = np.frombuffer(buf, np.uint8, n * h * w * c, pix_off).reshape(n, h, w, c)
    y = np.frombuffer(buf, np.int32, n, lab_off)
    return x, y, splits, classes


def make(classes, width):
    m = torchvision.models.resnet18(num_classes=classes)
    if width != 64:
        raise SystemExit("torchvision's resnet18 is width 64 only")
    m.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
    m.maxpool = nn.Identity()
    return m


def augment(x, pad):
    """Random crop with zero padding and horizontal flip, per image, on the GPU."""
    n, c, h, w = x.shape
    xp = F.pad(x, (pad, pad, pad, pad))
    dy = torch.randint(0, 2 * pad + 1, (n,), device=x.device)
    dx = torch.randint(0, 2 * pad + 1, (n,), device=x.device)
    rows = (dy[:, None] + torch.arange(h, device=x.device)[None, :])  # [n, h]
    cols = (dx[:, None] + torch.arange(w, device=x.device)[None, :])  # [n, w]
    flip = torch.rand(n, device=x.device) < 0.5
    cols = torch.where(flip[:, None], cols.flip(1), cols)
    idx_n = torch.arange(n, device=x.device)[:, None, None, None]
    idx_c = torch.arange(c, device=x.device)[None, :, None, None]
    return xp[idx_n, idx_c, rows[:, None, :, None], cols[:, None, None, :]]


def run(mode, args, xtr, ytr, xte, yte, mean, std, classes):
    torch.manual_seed(args.seed)
    model = make(classes, args.width).cuda().to(memory_format=torch.channels_last)
    decay = [p for n_, p in model.named_parameters() if p.ndim > 1]
    no_decay = [p for n_, p in model.named_parameters() if p.ndim <= 1]
    opt = torch.optim.SGD([{"params": decay, "weight_decay": args.wd},
                           {"params": no_decay, "weight_decay": 0.0}],
                          lr=args.lr, momentum=0.9, nesterov=True)
    fwd = torch.compile(model) if mode == "compile" else model
    n = xtr.shape[0]
    steps = n // args.batch
    total = steps * args.epochs
    times = []
    compile_s = 0.0

    def prep(xb):
        xb = (xb.permute(0, 3, 1, 2).float() / 255.0 - mean) / std
        return xb

    step = 0
    for e in range(args.epochs):
        model.train()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        perm = torch.randperm(n, device="cuda")
        for s in range(steps):
            lr = 0.5 * args.lr * (1 + math.cos(math.pi * step / total))
            for g in opt.param_groups:
                g["lr"] = lr
            idx = perm[s * args.batch:(s + 1) * args.batch]
            xb = augment(prep(xtr[idx]), 4).contiguous(memory_format=torch.channels_last)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = F.cross_entropy(fwd(xb), ytr[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            step += 1
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        times.append(dt)
        if e == 0:
            compile_s = dt
    model.eval()
    correct = 0
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        for i in range(0, xte.shape[0], 1000):
            xb = prep(xte[i:i + 1000]).contiguous(memory_format=torch.channels_last)
            correct += (fwd(xb).argmax(1) == yte[i:i + 1000]).sum().item()
    acc = correct / xte.shape[0]
    per = statistics.median(times[1:]) if len(times) > 1 else times[0]
    print(f"RESULT impl=torch-{mode} arch=resnet18 batch={args.batch} math=bf16 "
          f"s_per_epoch={per:.4f} img_per_s={steps * args.batch / per:.0f} acc={acc:.4f} "
          f"first_epoch_s={compile_s:.2f}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("packed")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--wd", type=float, default=5e-4)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--modes", default="eager,compile")
    ap.add_argument("--seed", type=int, default=0, help="initialisation and augmentation seed")
    args = ap.parse_args()
    x, y, (ntr, nva, nte), classes = read_pack(args.packed)
    if x.shape[3] != 3:
        raise SystemExit("an RGB packed file is expected")
    torch.backends.cudnn.benchmark = True
    xtr = torch.from_numpy(np.array(x[:ntr + nva])).cuda()
    ytr = torch.from_numpy(y[:ntr + nva].astype(np.int64)).cuda()
    xte = torch.from_numpy(np.array(x[ntr + nva:])).cuda()
    yte = torch.from_numpy(y[ntr + nva:].astype(np.int64)).cuda()
    f = xtr.float() / 255.0
    mean = f.mean(dim=(0, 1, 2)).view(1, 3, 1, 1)
    std = f.std(dim=(0, 1, 2)).view(1, 3, 1, 1)
    del f
    for mode in args.modes.split(","):
        run(mode, args, xtr, ytr, xte, yte, mean, std, classes)


if __name__ == "__main__":
    main()
