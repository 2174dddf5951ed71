"""A small learnable IDX dataset (28x28, 10 classes): each class a bright bar at its own column,
plus deterministic noise, gzip-compressed as Fashion-MNIST ships. Learnable in a few epochs, not
trivial. Used by the integration tests whose workers download their data over HTTP.

usage: blob_idx.py DIR N_TRAIN N_TEST"""
import gzip
import os
import struct
import sys


def write_blob_idx(d, n_train, n_test):
    os.makedirs(d)
    for split, n in (("train", n_train), ("t10k", n_test)):
        labels = bytes((i * 7 + i // 3) % 10 for i in range(n))
        px = bytearray()
        for i in range(n):
            c = labels[i]
            for y in range(28):
                for x in range(28):
                    v = 200 if abs(x - 3 - 2 * c) < 3 and abs(y - 14) < 10 else 0
                    px.append((v + (x * 31 + y * 17 + i * 13) % 50) % 256)
        with gzip.open(os.path.join(d, "%s-images-idx3-ubyte.gz" % split), "wb") as f:
            f.write(struct.pack(">IIII", 0x803, n, 28, 28) + bytes(px))
        with gzip.open(os.path.join(d, "%s-labels-idx1-ubyte.gz" % split), "wb") as f:
            f.write(struct.pack(">II", 0x801, n) + labels)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    write_blob_idx(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
