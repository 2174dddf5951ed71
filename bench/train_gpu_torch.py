#!/usr/bin/env python3
"""bench/train_gpu_torch.py: the PyTorch side of bench/train_gpu.sh. The same MLP and CNN as
bench_train_gpu (train/net.c), Fashion-MNIST resident on the GPU, SGD momentum 0.9 lr 0.01, batch shuffled
with torch.randperm on the device, last partial batch dropped (like ours). Modes: eager and
torch.compile(mode="reduce-overhead"). Prints RESULT lines in the format of bench_train_gpu."""
import argparse, gzip, os, statistics, sys, time

try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:  # pragma: no cover
    print(f"train_gpu_torch: skipped, PyTorch missing ({e})")
    sys.exit(0)

MEAN, STD = 0.2860, 0.3530


def load(d, split):
    pre = "train" if split else "t10k"
    with gzip.open(os.path.join(d, f"{pre}-images-idx3-ubyte.gz")) as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
    with gzip.open(os.path.join(d, f"{pre}-labels-idx1-ubyte.gz")) as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)
    x = (torch.tensor(x, dtype=torch.float32) / 255.0 - MEAN) / STD
    return x.cuda(), torch.tensor(y, dtype=torch.int64).cuda()


def make(arch):
    if arch == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))


def run(arch, batch, mode, epochs, xtr, ytr, xte, yte):
    torch.manual_seed(0)
    model = make(arch).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    fwd = torch.compile(model, mode="reduce-overhead") if mode == "compile" else model
    n = xtr.shape[0]
    steps = n // batch
    times = []
    for e in range(epochs):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        perm = torch.randperm(n, device="cuda")
        for s in range(steps):
            idx = perm[s * batch:(s + 1) * batch]
            out = fwd(xtr[idx])
            loss = F.cross_entropy(out, ytr[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    model.eval()
    with torch.no_grad():
        correct = sum((model(xte[i:i + 1000]).argmax(1) == yte[i:i + 1000]).sum().item()
                      for i in range(0, xte.shape[0], 1000))
    acc = correct / xte.shape[0]
    med = statistics.median(times[1:]) if epochs > 1 else times[0]
    print(f"RESULT impl=torch-{mode} arch={arch} batch={batch} math=default s_per_epoch={med:.4f} "
          f"first_epoch={times[0]:.4f} img_per_s={steps * batch / med:.0f} acc={acc:.4f} "
          f"epochs={epochs}", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default=os.environ.get("HONE_FMNIST_DIR",
                                                    "/usr/share/datasets/fashion-mnist"))
    p.add_argument("--arch", default="mlp,cnn")
    p.add_argument("--batch", default="128,512")
    p.add_argument("--modes", default="eager,compile")
    p.add_argument("--epochs", type=int, default=5)
    a = p.parse_args()
    if not torch.cuda.is_available():
        print("train_gpu_torch: skipped, no CUDA device")
        return
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}, "
          f"cudnn.allow_tf32={torch.backends.cudnn.allow_tf32}, "
          f"matmul.allow_tf32={torch.backends.cuda.matmul.allow_tf32}", flush=True)
    xtr, ytr = load(a.data, True)
    xte, yte = load(a.data, False)
    for mode in a.modes.split(","):
        for arch in a.arch.split(","):
            for b in a.batch.split(","):
                run(arch, int(b), mode, a.epochs, xtr, ytr, xte, yte)


if __name__ == "__main__":
    main()
