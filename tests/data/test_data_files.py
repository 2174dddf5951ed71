#!/usr/bin/python3
"""data/ on real files, against Pillow (Debian's python3-pil, which uses the same libjpeg-turbo):
- a Fashion-MNIST subset written as a PNG folder and as an RGB JPEG folder: every file decodes to
  Pillow's pixels exactly (native channels, and converted to the other count);
- PNG and JPEG variants made here (palette, palette + tRNS, RGBA, grey + alpha, 1/2/4/16-bit
  grey, 16-bit RGB(A), Adam7 interlaced, progressive and grey JPEGs): exact against Pillow
  (16-bit grey: against the high byte of Pillow's 16-bit values);
- real photographs shipped by Debian packages (python3-skimage, python3-sklearn; or the folders
  in $HONE_TEST_PHOTO_DIRS, colon-separated): exact where Pillow decodes them, an error naming the
  file where Pillow refuses them; skipped when none are installed;
- resizing against Pillow: BOX when shrinking, BILINEAR when growing, within 1 level (Pillow
  rounds to uint8 between its two passes, data/ does not);
- broken files (cut short, bad CRC, wrong magic, CMYK, GIF, empty) give the named error;
- hone-pack: the PNG folder packed at 28x28 grey holds exactly the IDX pixels and labels (read
  here from the format as data/data.h documents it, checksums included), the JPEG folder packed
  at 28x28 RGB exactly Pillow's pixels; a packed file cut short, with a flipped byte or a wrong
  magic is refused by name.
Usage: test_data_files.py DATA_TOOL HONE_PACK
"""
import os
import warnings
import struct
import subprocess
import sys
import tempfile
import zlib

try:
    from PIL import Image
except ImportError:
    print("SKIP: no Pillow for this python (apt-get install python3-pil)")
    sys.exit(77)

warnings.filterwarnings("ignore")  # Pillow on palette + tRNS files: not ours to hear
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fmnist_folder  # noqa: E402

TOOL, PACK = sys.argv[1], sys.argv[2]
failures = []
HONE_EPARSE, HONE_ENOTSUP, HONE_ELIMIT = -6, -8, -11


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def run_tool(args, paths, tmp):
    out = subprocess.run([TOOL] + args, input="".join(p + "\n" for p in paths), text=True,
                         capture_output=True, check=True).stdout.splitlines()
    res = []
    for line, p in zip(out, paths):
        i, status, rest = line.split(" ", 2)
        if status == "ok":
            w, h, c = (int(v) for v in rest.split())
            res.append(("ok", (w, h, c), open(os.path.join(tmp, i + ".raw"), "rb").read()))
        else:
            code, msg = rest.split(" ", 1)
            res.append(("err", int(code), msg))
    if len(res) != len(paths):
        fail("data_tool answered %d of %d paths" % (len(res), len(paths)))
    return res


def decode_all(paths, channels=0):
    with tempfile.TemporaryDirectory() as tmp:
        return run_tool(["decode", str(channels), tmp], paths, tmp)


def pillow_expected(path, channels):
    """What data/ should decode: (w, h, c, bytes), or an exception's text."""
    try:
        im = Image.open(path)
        im.load()
    except Exception as e:  # noqa: BLE001 - any refusal counts
        return str(e) or type(e).__name__
    if im.mode in ("I;16", "I;16B", "I;16L", "I"):
        vals = list(im.getdata())
        grey = bytes(v >> 8 for v in vals)
        im = Image.frombytes("L", im.size, grey)
    native = 1 if im.mode in ("1", "L", "LA", "La") else 3
    c = channels or native
    if native == 3 and im.mode not in ("RGB",):
        im = im.convert("RGB")  # palette, RGBA: colour kept, alpha dropped
    if native == 1 and im.mode != "L":
        im = im.convert("L")  # 1-bit, grey + alpha
    if c != native:
        im = im.convert("L" if c == 1 else "RGB")
    return (im.size[0], im.size[1], c, im.tobytes())


def compare(paths, channels=0, what=""):
    got = decode_all(paths, channels)
    exact = 0
    for p, g in zip(paths, got):
        want = pillow_expected(p, channels)
        if isinstance(want, str):
            if g[0] != "err" or p not in g[2]:
                fail("%s: Pillow refuses it (%s) but data/ gave %s" % (p, want, g[:2]))
            continue
        if g[0] != "ok":
            fail("%s%s: data/ refused it: %s" % (what, p, g[2]))
            continue
        if g[1] != want[:3]:
            fail("%s%s: shape %s, Pillow %s" % (what, p, g[1], want[:3]))
            continue
        if g[2] != want[3]:
            d = max(abs(a - b) for a, b in zip(g[2], want[3]))
            n = sum(a != b for a, b in zip(g[2], want[3]))
            fail("%s%s: %d of %d samples differ from Pillow (max %d)" % (what, p, n, len(g[2]), d))
            continue
        exact += 1
    return exact


# ------------------------------------------------------------------ PNGs written by hand

def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(w, h, ctype, depth, rows, interlace=False, plte=None, trns=None):
    """rows: h lists of w pixels, each a tuple of samples (ints)."""
    spp = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[ctype]

    def pack(pixels):
        if depth == 16:
            return b"".join(struct.pack(">%dH" % spp, *px) for px in pixels)
        if depth == 8:
            return bytes(s for px in pixels for s in px)
        bits, acc, n = [], 0, 0
        for px in pixels:
            acc = (acc << depth) | px[0]
            n += depth
            if n == 8:
                bits.append(acc)
                acc, n = 0, 0
        if n:
            bits.append(acc << (8 - n))
        return bytes(bits)

    raw = b""
    if interlace:
        for x0, y0, dx, dy in ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4),
                               (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)):
            if x0 >= w or y0 >= h:
                continue
            for y in range(y0, h, dy):
                raw += b"\0" + pack(rows[y][x0::dx])
    else:
        for r in rows:
            raw += b"\0" + pack(r)
    out = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0,
                                                             1 if interlace else 0))
    if plte:
        out += chunk(b"PLTE", bytes(s for c in plte for s in c))
    if trns:
        out += chunk(b"tRNS", trns)
    return out + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def make_variants(d):
    w, h = 13, 9  # odd sizes: row padding and partial interlace passes
    files = {}

    def pix(x, y, k):
        return (x * 37 + y * 91 + k * 53) % 256

    def rows(spp, depth=8):
        m = (1 << depth) - 1
        return [[tuple((pix(x, y, k) * 257 if depth == 16 else pix(x, y, k)) & m
                       for k in range(spp)) for x in range(w)] for y in range(h)]

    files["grey8.png"] = png(w, h, 0, 8, rows(1))
    for depth in (1, 2, 4):
        files["grey%d.png" % depth] = png(w, h, 0, depth, rows(1, depth))
    files["grey16.png"] = png(w, h, 0, 16, [[((x * 4099 + y * 777) % 65536,) for x in range(w)]
                                            for y in range(h)])
    files["greyalpha8.png"] = png(w, h, 4, 8, rows(2))
    files["rgb8.png"] = png(w, h, 2, 8, rows(3))
    files["rgba8.png"] = png(w, h, 6, 8, rows(4))
    files["rgb16.png"] = png(w, h, 2, 16, [[tuple((x * 3001 + y * 17 + k * 9000) % 65536
                                                  for k in range(3)) for x in range(w)]
                                           for y in range(h)])
    files["rgba16.png"] = png(w, h, 6, 16, [[tuple((x * 1234 + y * 4321 + k * 999) % 65536
                                                   for k in range(4)) for x in range(w)]
                                            for y in range(h)])
    files["rgb8-adam7.png"] = png(w, h, 2, 8, rows(3), interlace=True)
    files["grey8-adam7.png"] = png(w, h, 0, 8, rows(1), interlace=True)
    plte = [(i * 3 % 256, i * 5 % 256, i * 7 % 256) for i in range(256)]
    files["palette.png"] = png(w, h, 3, 8, rows(1), plte=plte)
    files["palette-trns.png"] = png(w, h, 3, 8, rows(1), plte=plte, trns=bytes(range(0, 256, 2)))
    files["palette4.png"] = png(w, h, 3, 4, rows(1, 4), plte=plte[:16])
    files["rgb-trns.png"] = png(w, h, 2, 8, rows(3), trns=struct.pack(">HHH", 10, 20, 30))
    paths = []
    for name, data in sorted(files.items()):
        p = os.path.join(d, name)
        open(p, "wb").write(data)
        paths.append(p)
    # JPEGs through Pillow: baseline RGB, progressive RGB, grey, 4:4:4 and 4:2:0
    src = Image.frombytes("RGB", (w * 5, h * 5), bytes(pix(i % (w * 5), i // (w * 5), k)
                                                       for i in range(w * h * 25)
                                                       for k in range(3)))
    for name, kw in (("base.jpg", {}), ("progressive.jpg", {"progressive": True}),
                     ("s444.jpg", {"subsampling": 0}), ("s420.jpg", {"subsampling": 2}),
                     ("q20.jpg", {"quality": 20})):
        p = os.path.join(d, name)
        src.save(p, **kw)
        paths.append(p)
    p = os.path.join(d, "grey.jpg")
    src.convert("L").save(p)
    paths.append(p)
    return paths


def photo_dirs():
    dirs = ["/usr/lib/python3/dist-packages/skimage/data",
            "/usr/lib/python3/dist-packages/sklearn/datasets/images"]
    here = os.path.dirname(os.path.abspath(__file__))
    cache = os.path.join(here, "..", "..", ".cache", "photos")  # scripts/bootstrap.sh puts them here
    dirs += [os.path.join(cache, "skimage"), os.path.join(cache, "sklearn")]
    dirs += [d for d in os.environ.get("HONE_TEST_PHOTO_DIRS", "").split(":") if d]
    return [d for d in dirs if os.path.isdir(d)]


def expect_error(path, code, words):
    g = decode_all([path])[0]
    if g[0] != "err" or g[1] != code or not g[2].startswith(path + ": ") or \
            not all(w.lower() in g[2][len(path):].lower() for w in words):
        fail("%s: want error %d naming the file and %s, got %s" % (path, code, words, g))
    else:
        print("  refused as it should: %s" % g[2])
    p = run_tool_probe([path])[0]
    return p


def run_tool_probe(paths):
    out = subprocess.run([TOOL, "probe"], input="".join(p + "\n" for p in paths), text=True,
                         capture_output=True, check=True).stdout.splitlines()
    return [line.split(" ", 2)[1:] for line in out]


def broken_files(d, good_png, good_jpg):
    png_bytes = open(good_png, "rb").read()
    jpg_bytes = open(good_jpg, "rb").read()

    def put(name, data):
        p = os.path.join(d, name)
        open(p, "wb").write(data)
        return p

    expect_error(put("cut.png", png_bytes[:len(png_bytes) // 2]), HONE_EPARSE, ["truncated"])
    expect_error(put("no-iend.png", png_bytes[:-12]), HONE_EPARSE, [])
    for kind in (b"IHDR", b"IDAT"):  # the stored CRC of the chunk changed, its data intact
        bad = bytearray(png_bytes)
        at = bad.find(kind)
        size = struct.unpack(">I", bad[at - 4:at])[0]
        bad[at + 4 + size] ^= 0x01
        expect_error(put("crc-%s.png" % kind.decode(), bytes(bad)), HONE_EPARSE, ["crc"])
    bad = bytearray(png_bytes)
    at = bad.find(b"IDAT")
    bad[at + 6] ^= 0x40  # a byte of the compressed data: zlib or the CRC refuses it
    expect_error(put("corrupt-idat.png", bytes(bad)), HONE_EPARSE, [])
    bad = bytearray(png_bytes)
    bad[1] = ord("Q")
    expect_error(put("magic.png", bytes(bad)), HONE_EPARSE, ["magic"])
    expect_error(put("cut.jpg", jpg_bytes[:len(jpg_bytes) * 2 // 3]), HONE_EPARSE, ["premature"])
    expect_error(put("empty.png", b""), HONE_EPARSE, ["empty"])
    expect_error(put("text.jpg", b"hello, not an image\n"), HONE_EPARSE, ["magic"])
    cmyk = os.path.join(d, "cmyk.jpg")
    Image.new("CMYK", (8, 8), (10, 20, 30, 40)).save(cmyk)
    expect_error(cmyk, HONE_ENOTSUP, ["cmyk"])
    probe = run_tool_probe([cmyk])[0]
    if probe[0] != "err" or "CMYK" not in probe[1]:
        fail("probe accepts a CMYK JPEG: %s" % probe)
    gif = os.path.join(d, "anim.gif")
    Image.new("P", (4, 4)).save(gif)
    expect_error(gif, HONE_ENOTSUP, ["gif"])
    big = png(1, 1, 0, 8, [[(0,)]])
    big = big[:16] + struct.pack(">II", 100000, 100000) + big[24:]
    ihdr = big[12:29]
    big = big[:29] + struct.pack(">I", zlib.crc32(ihdr)) + big[33:]
    expect_error(put("bomb.png", big), HONE_ELIMIT, ["limit"])


def area_reference(im, w, h):
    """Exact area averaging (each output pixel the mean of the source area it covers), in
    floating point: the reference for shrinking by a fraction, where Pillow's BOX samples the
    source at pixel centres instead of integrating."""
    sw, sh = im.size
    c = len(im.getbands())
    px = im.tobytes()

    def weights(n_in, n_out):
        s = n_in / n_out
        out = []
        for i in range(n_out):
            lo, hi = i * s, (i + 1) * s
            out.append([(j, (min(j + 1, hi) - max(j, lo)) / s)
                        for j in range(int(lo), min(n_in, int(-(-hi // 1))))
                        if min(j + 1, hi) > max(j, lo)])
        return out

    wx, wy = weights(sw, w), weights(sh, h)
    res = bytearray()
    for y in range(h):
        for x in range(w):
            for k in range(c):
                v = sum(a * b * px[(j * sw + i) * c + k] for j, a in wy[y] for i, b in wx[x])
                res.append(min(255, max(0, int(v + 0.5))))
    return bytes(res)


def check_resize(paths):
    """Shrinking by whole factors against Pillow's BOX (then both are exact area means), by
    fractions against area_reference, growing against Pillow's BILINEAR: all share data/'s
    half-pixel convention. Within 1 level: Pillow rounds to uint8 between its passes."""
    worst = 0
    for p in paths:
        want = pillow_expected(p, 0)
        im = Image.frombytes("L" if want[2] == 1 else "RGB", want[:2], want[3])
        sw, sh = im.size
        cases = [((sw // 2, sh // 2), lambda i, w, h: i.resize((w, h), Image.BOX).tobytes()),
                 ((max(1, sw * 2 // 7), max(1, sh * 3 // 5)), area_reference),
                 ((sw * 3 + 1, sh * 2 + 3),
                  lambda i, w, h: i.resize((w, h), Image.BILINEAR).tobytes())]
        if sw % 2 or sh % 2:
            cases = cases[1:]
        for (w, h), ref in cases:
            with tempfile.TemporaryDirectory() as tmp:
                g = run_tool(["resize", str(w), str(h), tmp], [p], tmp)[0]
            r = ref(im, w, h)
            d = max(abs(a - b) for a, b in zip(g[2], r))
            worst = max(worst, d)
            if g[1] != (w, h, want[2]) or d > 1:
                fail("%s: resized to %dx%d: %s, %d from the reference" % (p, w, h, g[1], d))
    print("resize: %d images, within %d of the references" % (len(paths), worst))


def read_pack(path):
    """The packed file as data/data.h documents it; asserts the checksums and offsets."""
    b = open(path, "rb").read()
    assert b[:8] == b"HONEPAK\0", "magic"
    version, hb = struct.unpack_from("<II", b, 8)
    n, h, w, c, classes = struct.unpack_from("<QIIII", b, 16)
    split = struct.unpack_from("<3Q", b, 40)
    po, lo, pb, pcrc, hcrc = struct.unpack_from("<QQQII", b, 64)
    assert version == 1 and hb % 64 == 0 and po == hb and sum(split) == n
    assert lo == (po + n * h * w * c + 63) // 64 * 64 and len(b) == lo + 4 * n and pb == len(b) - hb
    assert zlib.crc32(b[hb:]) == pcrc, "payload crc"
    assert zlib.crc32(b[:92] + b"\0\0\0\0" + b[96:hb]) == hcrc, "header crc"
    names, off = [], 128
    for _ in range(classes):
        (ln,) = struct.unpack_from("<H", b, off)
        names.append(b[off + 2:off + 2 + ln].decode())
        off += 2 + ln
    labels = struct.unpack_from("<%di" % n, b, lo)
    return dict(n=n, h=h, w=w, c=c, split=split, names=names, labels=labels,
                pixels=b[po:po + n * h * w * c])


def check_pack(fm, tmp, pngs, jpgs):
    out = os.path.join(tmp, "png.pack")
    subprocess.run([PACK, os.path.join(tmp, "png"), out, "--size", "28x28", "--grey", "--quiet"],
                   check=True, stdout=subprocess.DEVNULL)
    pk = read_pack(out)
    want_order = [e for s in ("train", "val") for e in
                  sorted(pngs[s], key=lambda e: (fmnist_folder.CLASSES[e[2]], e[0]))]
    (_, h, w), trpx = fmnist_folder.read_idx(fm, "train-images-idx3-ubyte")
    _, tepx = fmnist_folder.read_idx(fm, "t10k-images-idx3-ubyte")
    size, bad = h * w, 0
    for k, (path, i, y) in enumerate(want_order):
        src = trpx if k < pk["split"][0] else tepx
        if pk["pixels"][k * size:(k + 1) * size] != src[i * size:(i + 1) * size] or \
                pk["names"][pk["labels"][k]] != fmnist_folder.CLASSES[y]:
            bad += 1
    if (pk["n"], pk["h"], pk["w"], pk["c"]) != (len(want_order), 28, 28, 1) or bad or \
            pk["split"] != (len(pngs["train"]), len(pngs["val"]), 0) or \
            pk["names"] != sorted(fmnist_folder.CLASSES):
        fail("PNG folder packed at 28x28 grey: %d of %d images differ from the IDX files, "
             "header %s" % (bad, len(want_order), {k: pk[k] for k in ("n", "h", "w", "c")}))
    else:
        print("pack: %d PNG images at 28x28 grey equal the IDX pixels and labels exactly"
              % pk["n"])
    out2 = os.path.join(tmp, "jpg.pack")
    subprocess.run([PACK, os.path.join(tmp, "jpg"), out2, "--size", "28x28", "--quiet"],
                   check=True, stdout=subprocess.DEVNULL)
    pk = read_pack(out2)
    order = [e for s in ("train", "val") for e in
             sorted(jpgs[s], key=lambda e: (fmnist_folder.CLASSES[e[2]], e[0]))]
    bad = sum(pk["pixels"][k * 28 * 28 * 3:(k + 1) * 28 * 28 * 3] !=
              Image.open(p).convert("RGB").tobytes() for k, (p, _, _) in enumerate(order))
    if pk["c"] != 3 or bad:
        fail("JPEG folder packed at 28x28 RGB: %d images differ from Pillow" % bad)
    else:
        print("pack: %d JPEG images at 28x28 RGB equal Pillow's pixels exactly" % pk["n"])
    # broken packed files: refused by name
    data = open(out, "rb").read()
    for name, b, words in (("cut.pack", data[:len(data) - 100], "truncated"),
                           ("flip.pack", data[:5000] + bytes([data[5000] ^ 1]) + data[5001:],
                            "payload checksum"),
                           ("head.pack", data[:20] + bytes([data[20] ^ 1]) + data[21:],
                            "header checksum"),
                           ("magic.pack", b"HONEPAQ\0" + data[8:], "wrong magic")):
        p = os.path.join(tmp, name)
        open(p, "wb").write(b)
        r = subprocess.run([PACK, "--verify", p], capture_output=True, text=True)
        if r.returncode == 0 or p not in r.stderr or words not in r.stderr:
            fail("hone-pack --verify %s: rc %d, %r (want %r)" % (name, r.returncode, r.stderr,
                                                                  words))
        else:
            print("  refused as it should: %s" % r.stderr.strip())


def main():
    fm = fmnist_folder.find_fmnist()
    with tempfile.TemporaryDirectory(prefix="hone-data-files-") as tmp:
        os.makedirs(os.path.join(tmp, "v"))
        variants = make_variants(os.path.join(tmp, "v"))
        n = compare(variants)
        n += compare(variants, 1, "grey: ")
        n += compare(variants, 3, "rgb: ")
        print("variants: %d of %d decodes exact" % (n, 3 * len(variants)))
        if fm:
            pngs = fmnist_folder.write_folder(fm, os.path.join(tmp, "png"), per_class=20)
            jpgs = fmnist_folder.write_folder(fm, os.path.join(tmp, "jpg"), per_class=10,
                                              jpeg=True)
            pp = [p for v in pngs.values() for p, _, _ in v]
            jp = [p for v in jpgs.values() for p, _, _ in v]
            print("fashion-mnist PNG: %d of %d exact" % (compare(pp), len(pp)))
            print("fashion-mnist JPEG (RGB): %d of %d exact" % (compare(jp), len(jp)))
            print("fashion-mnist JPEG as grey: %d of %d exact" % (compare(jp, 1), len(jp)))
            check_resize(pp[:3] + jp[:3] + [p for p in variants if "rgb8" in p])
            check_pack(fm, tmp, pngs, jpgs)
        else:
            print("SKIP part: no Fashion-MNIST (apt-get install dataset-fashion-mnist)")
        photos = sorted(os.path.join(d, f) for d in photo_dirs() for f in os.listdir(d)
                        if f.lower().endswith((".png", ".jpg", ".jpeg")))
        if photos:
            print("photographs from Debian packages: %d of %d exact (the rest refused by both)"
                  % (compare(photos), len(photos)))
        elif os.environ.get("HONE_REQUIRE_PHOTOS") == "1":
            fail("no photographs from Debian packages (scripts/bootstrap.sh fetches them)")
        else:
            print("SKIP part: no photographs from Debian packages (python3-skimage)")
        broken_files(tmp, variants[0], [p for p in variants if p.endswith("base.jpg")][0])
    print("%d passed, %d failed" % (1 if not failures else 0, 1 if failures else 0))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
