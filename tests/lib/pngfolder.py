"""Image folders of generated PNGs for the convert tests: <root>/<class>/<n>.png, RGB or grey,
each image a smooth pattern that depends on its class and number (so classes differ and the PNGs
compress well), and flat KITTI sets of such PNGs with boxes. Stdlib only (zlib), so the tests
need no Pillow."""
import os
import struct
import zlib


def png_bytes(w, h, rows, rgb):
    """A PNG of h rows (each w pixels of 1 or 3 bytes, as bytes)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I",
                                                                        zlib.crc32(kind + data))
    raw = b"".join(b"\0" + r for r in rows)
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2 if rgb else 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 1)) +
            chunk(b"IEND", b""))


def write_folder(root, classes=2, per_class=10, size=32, rgb=True):
    """Writes the folder; returns the number of images."""
    for c in range(classes):
        d = os.path.join(root, "class%d" % c)
        os.makedirs(d, exist_ok=True)
        for i in range(per_class):
            ch = 3 if rgb else 1
            # one long pattern row; row y is a window into it, shifted by y, i and the class
            pat = bytes(((k * 7 + 50 * c) ^ (k // 5 + i)) % 256 for k in range(2 * size * ch))
            rows = [pat[((y * 3 + i) * ch) % (size * ch):][:size * ch] for y in range(size)]
            with open(os.path.join(d, "%d.png" % i), "wb") as f:
                f.write(png_bytes(size, size, rows, rgb))
    return classes * per_class


def write_kitti(root, images=20, size=64, classes=("a", "b")):
    """A flat KITTI set: <root>/images/<n>.png (RGB patterns as above) and <root>/labels/<n>.txt
    with one or two boxes inside the image, of classes[n % len] and classes[(n + 1) % len].
    Returns the number of boxes."""
    for d in ("images", "labels"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    boxes = 0
    for i in range(images):
        pat = bytes(((k * 7 + 13 * i) ^ (k // 5)) % 256 for k in range(6 * size))
        rows = [pat[(y * 9 + i) % (3 * size):][:3 * size] for y in range(size)]
        with open(os.path.join(root, "images", "%d.png" % i), "wb") as f:
            f.write(png_bytes(size, size, rows, True))
        x = (i * 5) % (size // 2)
        lines = ["%s 0.00 0 0.0 %d.0 %d.0 %d.0 %d.0 0 0 0 0 0 0 0\n" % (
            classes[i % len(classes)], x, x // 2, x + size // 2, x // 2 + size // 3)]
        if i % 2:
            lines.append("%s 0.00 0 0.0 %d.0 %d.0 %d.0 %d.0 0 0 0 0 0 0 0\n" % (
                classes[(i + 1) % len(classes)], size // 4, size // 2, size - 1, size - 2))
        with open(os.path.join(root, "labels", "%d.txt" % i), "w") as f:
            f.writelines(lines)
        boxes += len(lines)
    return boxes
