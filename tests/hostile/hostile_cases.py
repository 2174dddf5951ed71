"""The hostile-input table: each case builds raw request bytes against a live controller (ids of
fixtures in x) and says which answers are acceptable, which error field must be named, and what
must hold afterwards. 'close' in expect accepts the server dropping the connection unanswered."""
import io
import json
import os
import stat
import zipfile
import zlib

from hostile_http import request_bytes as rb

CASES = []

# Known, reported controller bugs that make a row fail (the row stays red until they are fixed).
KNOWN_BUGS = {
    "daemon": "known bug: controller/routes_workers.c:45 leaks the `json_object()` it passes to "
              "jdump() when a worker registers without `resources` (LeakSanitizer at exit)",
}


def case(kind, name, expect, field=None, n=1, pause=None, timeout=15.0, check=None, closes=False):
    """closes: the server must also close the connection after its answer."""
    def reg(fn):
        CASES.append(dict(kind=kind, name=name, expect=set(expect), field=field, build=fn, n=n,
                          pause=pause, timeout=timeout, check=check, closes=closes))
        return fn
    return reg


def exp_body(x, **over):
    b = {"name": "e", "network_arch": "mlp", "train_datasets": [x["ds"]], "metric": "val_accuracy"}
    b.update(over)
    return b


def as_worker(x, wid):
    """The credential of a fixture worker (none for a made-up id)."""
    return x["auth"].get(wid, {})


def report(x, body, job=None, auth=None):
    """A report sent with the credential of the worker it names, unless auth says otherwise."""
    return rb("POST", "/api/v1/jobs/%s/report" % (job or x["job"]), body,
              headers=as_worker(x, body.get("worker_id")) if auth is None else auth)


E = "/api/v1/experiments"

# ---- JSON syntax ---------------------------------------------------------------------------
case("json", "malformed JSON", [400])(lambda x: rb("POST", E, b'{"name": "e",, }'))
case("json", "truncated JSON", [400])(lambda x: rb("POST", E, b'{"name": "e", "network_arch": '))
case("json", "empty body", [400])(lambda x: rb("POST", E, b""))
case("json", "JSON array instead of object", [422])(lambda x: rb("POST", E, b"[1,2,3]"))
case("json", "bare JSON string", [422, 400])(lambda x: rb("POST", E, b'"hello"'))
case("json", "NaN literal", [400])(lambda x: rb("POST", E, b'{"name": NaN}'))
case("json", "duplicate key", [400])(lambda x: rb("POST", E, b'{"name": "a", "name": "b"}'))
case("json", "depth bomb (10000 nested arrays)", [400])(
    lambda x: rb("POST", E, b'{"name": ' + b"[" * 10000 + b"]" * 10000 + b"}"))
case("json", "depth bomb in specs (40 nested objects)", [400, 422])(
    lambda x: rb("POST", E, json.dumps(exp_body(x, specs=json.loads('{"a":' * 40 + "1" + "}" * 40)))
                 .encode()))
case("json", "invalid UTF-8 in a string", [400])(
    lambda x: rb("POST", E, b'{"name": "\xff\xfe\xc3"}'))
case("json", "overlong UTF-8 encoding of '/'", [400])(
    lambda x: rb("POST", E, b'{"name": "\xc0\xaf"}'))
case("json", "escaped NUL (\\u0000) in a string", [400, 422])(
    lambda x: rb("POST", E, b'{"name": "a\\u0000b", "network_arch": "mlp"}'))
case("json", "raw NUL byte in the body", [400])(
    lambda x: rb("POST", E, b'{"name": "a\x00b"}'))
case("json", "lone surrogate escape", [400, 422])(
    lambda x: rb("POST", E, b'{"name": "\\ud800"}'))
case("json", "string longer than the string limit (100 KB)", [400, 413])(
    lambda x: rb("POST", E, json.dumps(exp_body(x, description="d" * 100000)).encode()))

# ---- fields ---------------------------------------------------------------------------------
case("field", "unknown top-level field", [422], field="colour")(
    lambda x: rb("POST", E, exp_body(x, colour="red")))
case("field", "wrong type: name is a number", [422], field="name")(
    lambda x: rb("POST", E, exp_body(x, name=123)))
case("field", "network_arch not in enum", [422], field="network_arch")(
    lambda x: rb("POST", E, exp_body(x, network_arch="transformer")))
case("field", "missing required field (network_arch)", [422], field="network_arch")(
    lambda x: rb("POST", E, {k: v for k, v in exp_body(x).items() if k != "network_arch"}))
case("field", "very long name (5000 chars)", [422], field="name")(
    lambda x: rb("POST", E, exp_body(x, name="n" * 5000)))
case("field", "huge number of epochs (1e308)", [422], field="specs.train.epochs")(
    lambda x: rb("POST", E, exp_body(x, specs={"train": {"epochs": 1e308}})))
case("field", "negative epochs", [422], field="specs.train.epochs")(
    lambda x: rb("POST", E, exp_body(x, specs={"train": {"epochs": -3}})))
case("field", "fractional epochs", [422], field="specs.train.epochs")(
    lambda x: rb("POST", E, exp_body(x, specs={"train": {"epochs": 2.5}})))
case("field", "integer beyond 64 bits", [400, 422])(
    lambda x: rb("POST", E, b'{"name":"e","network_arch":"mlp","train_datasets":["%s"],'
                 b'"metric":"val_accuracy","specs":{"train.epochs":%s}}'
                 % (x["ds"].encode(), b"9" * 40)))
case("field", "unknown spec key", [422], field="specs.train.warp_speed")(
    lambda x: rb("POST", E, exp_body(x, specs={"train": {"warp_speed": 9}})))
case("field", "missing dataset id", [422], field="train_datasets")(
    lambda x: rb("POST", E, exp_body(x, train_datasets=["ds-doesnotexist"])))
case("field", "train_datasets is a string, not a list", [422], field="train_datasets")(
    lambda x: rb("POST", E, exp_body(x, train_datasets=x["ds"])))
case("field", "AutoML space with min > max", [422])(
    lambda x: rb("POST", E, exp_body(x, automl_settings={
        "automl_enabled": True, "automl_algorithm": "bayesian",
        "automl_hyperparameters": {"train.lr": {"type": "float", "min": 1, "max": 0.1}}})))
case("field", "AutoML space with an empty parameter name", [422])(
    lambda x: rb("POST", E, exp_body(x, automl_settings={
        "automl_enabled": True, "automl_algorithm": "bayesian",
        "automl_hyperparameters": {"train.lr": {"type": "float", "min": 0.001, "max": 0.1},
                                   "": 3}})))
case("field", "automl_max_recommendations negative", [422],
     field="automl_settings.automl_max_recommendations")(
    lambda x: rb("POST", E, exp_body(x, automl_settings={
        "automl_enabled": True, "automl_max_recommendations": -1})))
case("field", "automl_max_failed_trials zero", [422],
     field="automl_settings.automl_max_failed_trials")(
    lambda x: rb("POST", E, exp_body(x, automl_settings={
        "automl_enabled": True, "automl_max_failed_trials": 0})))
case("field", "unknown automl algorithm", [422], field="automl_settings.automl_algorithm")(
    lambda x: rb("POST", E, exp_body(x, automl_settings={
        "automl_enabled": True, "automl_algorithm": "genetic"})))
case("field", "job action not in enum", [422], field="action")(
    lambda x: rb("POST", "/api/v1/experiments/%s/jobs" % x["exp"], {"action": "rm -rf"}))
case("field", "worker name empty", [422], field="name")(
    lambda x: rb("POST", "/api/v1/workers", {"name": ""}))
# Spec combinations a worker cannot train (spec/spec.h: limits and cross-key rules), refused at
# create time as hone-train would refuse them mid-job.
case("field", "model above the parameter limit (hidden 65536, depth 64)", [422],
     field="specs.model.hidden")(
    lambda x: rb("POST", E, exp_body(x, specs={"model": {"hidden": 65536, "depth": 64}})))
# (a batch of 65536 on this 60-image set trains as the whole set, well within memory: the old
# refusal came from a controller that ignored the data's size; a sweep of such batches is refused)
case("field", "swept batch above the training images (32768..65536)", [422],
     field="automl_settings.automl_hyperparameters")(
    lambda x: rb("POST", E, exp_body(x, automl_settings={
        "automl_enabled": True, "automl_hyperparameters": {
            "train.batch_size": {"type": "int", "min": 32768, "max": 65536}}})))
case("field", "val_size beyond the dataset (1e9)", [422], field="specs.data.val_size")(
    lambda x: rb("POST", E, exp_body(x, specs={"data": {"val_size": 1000000000}})))
case("field", "warmup_epochs above epochs", [422], field="specs.train.warmup_epochs")(
    lambda x: rb("POST", E, exp_body(x, specs={"train": {"warmup_epochs": 20, "epochs": 10}})))
case("field", "momentum 1 (beyond hone-train's 0.9999)", [422], field="specs.train.momentum")(
    lambda x: rb("POST", E, exp_body(x, specs={"train": {"momentum": 1}})))
case("field", "key the network does not use (cnn with model.depth)", [422],
     field="specs.model.depth")(
    lambda x: rb("POST", E, exp_body(x, network_arch="cnn", specs={"model": {"depth": 4}})))
case("field", "AutoML space reaching past the parameter limit", [422],
     field="automl_settings.automl_hyperparameters")(
    lambda x: rb("POST", E, exp_body(x, specs={"model": {"depth": 8}}, automl_settings={
        "automl_enabled": True,
        "automl_hyperparameters": {"model.hidden": {"type": "int", "min": 64, "max": 65536}}})))
case("field", "AutoML schedule past the epoch limit (R 1000 x multiplier 1000)", [422],
     field="automl_settings.automl_R")(
    lambda x: rb("POST", E, exp_body(x, automl_settings={
        "automl_enabled": True, "automl_algorithm": "hyperband", "automl_R": 1000,
        "epoch_multiplier": 1000})))
case("field", "job specs above the parameter limit", [422], field="specs.model.hidden")(
    lambda x: rb("POST", "/api/v1/experiments/%s/jobs" % x["exp"],
                 {"action": "train", "specs": {"model": {"hidden": 65536, "depth": 64}}}))
case("field", "job warmup_epochs above the experiment's epochs", [422],
     field="specs.train.warmup_epochs")(
    lambda x: rb("POST", "/api/v1/experiments/%s/jobs" % x["exp"],
                 {"action": "train", "specs": {"train": {"warmup_epochs": 6}}}))



# ---- user names (issue 26): look-alikes and terminal/page rewriting refused, naming the field --
for _label, _name in (("a right-to-left override", "\u202eevil"), ("an ESC sequence", "eve\x1b[2J"),
                      ("a zero-width space", "ad\u200bmin"), ("a C1 control (NEL)", "a\x85b"),
                      ("a bidi isolate", "a\u2066b"), ("a BEL", "a\x07b")):
    case("names", "user name with " + _label, [422], field="name")(
        lambda x, n=_name: rb("POST", "/api/v1/users", {"name": n}))
case("names", "user name differing from one only in case", [409], field="name")(
    lambda x: rb("POST", "/api/v1/users", {"name": "ADMIN"}))

# ---- evaluate and inference jobs (x["job"] is a running train job: no model yet) ---------------
def act(x, body):
    return rb("POST", "/api/v1/experiments/%s/jobs" % x["exp"], body)


case("field", "evaluate of a job that has no model yet", [409], field="parent_job_id")(
    lambda x: act(x, {"action": "evaluate", "parent_job_id": x["job"]}))
case("field", "evaluate with a SQL-injection parent_job_id", [422], field="parent_job_id")(
    lambda x: act(x, {"action": "evaluate", "parent_job_id": "x' OR '1'='1"}))
case("field", "evaluate with a 10,000-character parent_job_id", [422], field="parent_job_id")(
    lambda x: act(x, {"action": "evaluate", "parent_job_id": "j" * 10000}))
case("field", "inference of a folder outside the data roots (/etc)", [422], field="folder")(
    lambda x: act(x, {"action": "inference", "parent_job_id": x["job"], "folder": "/etc"}))
case("field", "inference of a folder climbing out with ../..", [422], field="folder")(
    lambda x: act(x, {"action": "inference", "parent_job_id": x["job"],
                      "folder": x["roots"] + "/../../../etc"}))
case("field", "inference of a symlink out of the data roots", [422], field="folder")(
    lambda x: act(x, {"action": "inference", "parent_job_id": x["job"],
                      "folder": x["roots"] + "/escape"}))
case("field", "evaluate given a folder (inference's field)", [422], field="folder")(
    lambda x: act(x, {"action": "evaluate", "parent_job_id": x["job"], "folder": "/tmp"}))
case("field", "evaluate with specs (the model's own spec is used)", [422], field="specs")(
    lambda x: act(x, {"action": "evaluate", "parent_job_id": x["job"],
                      "specs": {"train": {"lr": 1}}}))
def cv(x, body, ds=None):
    return rb("POST", "/api/v1/datasets/%s/convert" % (ds or x["ds"]), body)


for _name, _body, _field in (
        ("convert without input_size", {"channels": 3}, "input_size"),
        ("convert input_size as a string", {"input_size": "32"}, "input_size"),
        ("convert input_size below 8", {"input_size": 7}, "input_size"),
        ("convert input_size above 512", {"input_size": 100000}, "input_size"),
        ("convert input_size 1e300", {"input_size": 1e300}, "input_size"),
        ("convert input_size as an object", {"input_size": {"a": 1}}, "input_size"),
        ("convert channels 2", {"input_size": 32, "channels": 2}, "channels"),
        ("convert channels -1", {"input_size": 32, "channels": -1}, "channels"),
        ("convert channels as a string", {"input_size": 32, "channels": "3"}, "channels"),
        ("convert unknown member", {"input_size": 32, "path": "/etc"}, "path")):
    case("field", _name, [422], field=_field)(lambda x, b=_body: cv(x, b))
case("field", "convert body is an array", [400, 422])(lambda x: cv(x, [32]))
case("field", "convert input_size 2^64 (past what the JSON parser takes)", [400, 422])(
    lambda x: cv(x, {"input_size": 2 ** 64}))
case("field", "convert of a dataset that does not exist", [404], field="id")(
    lambda x: cv(x, {"input_size": 32}, "ds-doesnotexist"))
case("field", "convert of an idx dataset", [409], field="format")(
    lambda x: cv(x, {"input_size": 32}))

# ---- paths and data roots -------------------------------------------------------------------


def ds_body(path):
    return {"name": "d", "type": "image_classification", "format": "idx", "path": path}


D = "/api/v1/datasets"
case("path", "dataset path with '..' out of the roots", [422], field="path")(
    lambda x: rb("POST", D, ds_body(x["roots"] + "/../outside/ds")))
case("path", "absolute dataset path outside the roots", [422], field="path")(
    lambda x: rb("POST", D, ds_body(x["outside"])))
case("path", "dataset path /etc", [422], field="path")(lambda x: rb("POST", D, ds_body("/etc")))
case("path", "symlink inside the roots pointing outside", [422], field="path")(
    lambda x: rb("POST", D, ds_body(x["roots"] + "/escape")))


def swapped(x, url):
    """The fixture dataset's folder replaced by a link to a folder outside the roots after it was
    checked (unswap, its post-condition, puts it back)."""
    ds = x["roots"] + "/ds"
    if not os.path.islink(ds):
        os.rename(ds, ds + ".real")
        os.symlink(x["outside"], ds)
    return rb("GET", url % x["ds"])


def unswap(x, r):
    ds = x["roots"] + "/ds"
    if os.path.islink(ds):
        os.unlink(ds)
        os.rename(ds + ".real", ds)
    return b"\x1f\x8b" not in r.body  # no byte of the files behind the link


case("path", "dataset folder replaced by a link out: manifest", [409], field="path", check=unswap)(
    lambda x: swapped(x, D + "/%s/files"))
case("path", "dataset folder replaced by a link out: a file", [409], field="path", check=unswap)(
    lambda x: swapped(x, D + "/%s/files/train-images-idx3-ubyte.gz"))
case("path", "relative dataset path", [422], field="path")(
    lambda x: rb("POST", D, ds_body("ds")))
case("path", "dataset path with '..' that stays inside the roots", [422], field="path")(
    lambda x: rb("POST", D, ds_body(x["roots"] + "/ds/../ds")))
case("path", "dataset folder without IDX files", [422], field="path")(
    lambda x: rb("POST", D, ds_body(x["roots"] + "/empty")))
case("path", "dataset format kitti (no checker yet)", [422])(
    lambda x: rb("POST", D, dict(ds_body(x["roots"] + "/ds"), format="kitti")))


def idx_trap(x, kind):
    """A dataset folder in the roots whose train images are a trap (made on first use): 'bomb' (a
    gzip of 1e9 zero bytes: within the size limit, past the inflate-ratio cap), 'big' (a header
    announcing 8 GiB) or 'fifo' (a FIFO, which would block the check for good)."""
    import gzip
    import struct
    import zlib
    folder = "%s/trap-%s" % (x["roots"], kind)
    if not os.path.isdir(folder):
        os.makedirs(folder)
        for split in ("train", "t10k"):
            with gzip.open("%s/%s-labels-idx1-ubyte.gz" % (folder, split), "wb") as f:
                f.write(struct.pack(">II", 0x801, 1000) + bytes(1000))
        images = folder + "/train-images-idx3-ubyte.gz"
        if kind == "fifo":
            os.mkfifo(images)
        else:
            dims = (1000, 1000, 1000) if kind == "bomb" else (8192, 1024, 1024)
            z = zlib.compressobj(9, zlib.DEFLATED, 31)
            with open(images, "wb") as f:
                f.write(z.compress(struct.pack(">IIII", 0x803, *dims)))
                for _ in range(64):
                    f.write(z.compress(bytes(1 << 20)))
                f.write(z.flush())
    return ds_body(folder)


case("path", "IDX gzip bomb (1e9 zero bytes in 64 KB)", [422], field="path")(
    lambda x: rb("POST", D, idx_trap(x, "bomb")))
case("path", "IDX header announcing 8 GiB (hone-train reads 2 at most)", [422], field="path")(
    lambda x: rb("POST", D, idx_trap(x, "big")))
case("path", "IDX file that is a FIFO", [422], field="path")(
    lambda x: rb("POST", D, idx_trap(x, "fifo")))


def coco_trap(x, kind):
    """A COCO dataset folder in the roots whose annotations.json is a trap (made on first use):
    'deep' (arrays nested 100,000 deep), 'dupkey' (a key twice), 'link' (a link to a file outside
    the roots), 'escape' (an image file_name climbing out with '..'), 'memory' (45 MB of empty
    strings that jansson would make into 2 GiB, more than limits.coco_json_memory's default)."""
    folder = "%s/coco-%s" % (x["roots"], kind)
    if not os.path.isdir(folder):
        os.makedirs(folder + "/images")
        js = folder + "/annotations.json"
        good = '"annotations": [], "categories": [{"id": 1, "name": "a"}]'
        if kind == "deep":
            text = '{"images": ' + "[" * 100000 + "]" * 100000 + ", " + good + "}"
        elif kind == "dupkey":
            text = '{"images": [], "images": [], ' + good + "}"
        elif kind == "memory":
            text = '{"images": [], "annotations": [], "categories": [""' + ',""' * 15000000 + "]}"
        elif kind == "escape":
            text = ('{"images": [{"id": 1, "file_name": "../../etc/passwd", "width": 1, '
                    '"height": 1}], ' + good + "}")
        else:
            text = None
        if text is None:
            with open(x["outside"] + "/coco.json", "w") as f:
                f.write('{"images": [], ' + good + "}")
            os.symlink(x["outside"] + "/coco.json", js)
        else:
            with open(js, "w") as f:
                f.write(text)
    return dict(ds_body(folder), type="object_detection", format="coco")


for _kind, _name in (("deep", "COCO JSON nested 100,000 deep"),
                     ("dupkey", "COCO JSON with a key twice"),
                     ("link", "COCO annotations.json a link out of the roots"),
                     ("escape", "COCO image file_name with '..'")):
    case("path", _name, [422], field="path")(lambda x, k=_kind: rb("POST", D, coco_trap(x, k)))
case("path", "COCO JSON of 45 MB that would take 2 GiB parsed", [422], field="path",
     check=lambda x, r: b"parsing it takes up to 2" in r.body and
     b"limits.coco_json_memory" in r.body)(lambda x: rb("POST", D, coco_trap(x, "memory")))
case("path", "artifact GET with %2e%2e%2f", [400, 403, 404, 422])(
    lambda x: rb("GET", "/api/v1/jobs/%s/artifacts/%%2e%%2e%%2f%%2e%%2e%%2fhone.db" % x["job"]))
case("path", "artifact GET with ..%2F in the dir segment", [400, 403, 404, 422])(
    lambda x: rb("GET", "/api/v1/jobs/%s/artifacts/..%%2F..%%2F/hone.db" % x["job"]))
case("path", "artifact GET through '..' segments", [400, 403, 404, 422])(
    lambda x: rb("GET", "/api/v1/jobs/%s/artifacts/../../hone.db" % x["job"]))
case("path", "artifact PUT named %2e%2e%2fescape", [400, 403, 404, 409, 422],
     check=lambda x, r: not os.path.exists(x["data"] + "/artifacts/escape.bin"))(
    lambda x: rb("PUT", "/api/v1/jobs/%s/artifacts/%%2e%%2e%%2fescape.bin" % x["job"], b"x" * 10,
                 ctype="application/octet-stream"))
# Range on a download (1000-byte dl.bin): one range is honoured; anything else is the whole file.
DL = "/api/v1/jobs/%s/artifacts/dl.bin"
def whole_dl(x, r):
    return len(r.body) == 1000 and "content-range" not in r.headers


case("path", "download with a Range past the end", [416], field="Range")(
    lambda x: rb("GET", DL % x["job"], headers={"Range": "bytes=1000-"}))
case("path", "download with 1500 ranges", [200], check=whole_dl)(
    lambda x: rb("GET", DL % x["job"], headers={"Range": "bytes=" + ",".join(["0-0"] * 1500)}))
case("path", "download with a Range beyond 2^64", [200], check=whole_dl)(
    lambda x: rb("GET", DL % x["job"], headers={"Range": "bytes=0-%s" % ("9" * 30)}))
case("path", "download with a negative Range", [200], check=whole_dl)(
    lambda x: rb("GET", DL % x["job"], headers={"Range": "bytes=-5-10"}))
case("path", "job id with encoded slash and dots", [400, 404])(
    lambda x: rb("GET", "/api/v1/jobs/..%2F..%2Fetc%2Fpasswd"))

# ---- names a terminal prints later ----------------------------------------------------------
case("name", "experiment name with an ESC sequence", [422], field="name")(
    lambda x: rb("POST", E, exp_body(x, name="x\x1b[2J\x1b]0;pwned\x07")))
case("name", "experiment name with a right-to-left override", [422], field="name")(
    lambda x: rb("POST", E, exp_body(x, name="report\u202egnp.exe")))
case("name", "experiment description with a C1 control (CSI)", [422], field="description")(
    lambda x: rb("POST", E, exp_body(x, description="a\u009b31m")))
case("name", "experiment rename to a name with CR", [422], field="name")(
    lambda x: rb("PATCH", E + "/" + x["exp"], {"name": "ok\rfake"}))
case("name", "dataset name with BEL", [422], field="name")(
    lambda x: rb("POST", D, dict(ds_body(x["roots"] + "/ds"), name="d\x07")))
case("name", "job name with a bidi isolate", [422], field="name")(
    lambda x: rb("POST", E + "/%s/jobs" % x["exp"], {"action": "train", "name": "j\u2066x"}))
case("name", "dataset upload named with invalid UTF-8", [422], field="name")(
    lambda x: rb("POST", "/api/v1/datasets:upload?name=%ff%fe", b"\0" * 1024,
                 ctype="application/x-tar"))


# ---- dataset uploads: compressed and zip archives (issue 30) ---------------------------------
def _gzip_bomb():
    """64 MiB of zeros gzipped (about 64 KiB): refused after 36 MiB by the 1000x bound."""
    co = zlib.compressobj(9, zlib.DEFLATED, 31)
    return b"".join(co.compress(b"\0" * (1 << 20)) for _ in range(64)) + co.flush()


def _zip(entries):
    """entries: (name or ZipInfo, bytes)."""
    bio = io.BytesIO()
    with zipfile.ZipFile(bio, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries:
            z.writestr(name, data)
    return bio.getvalue()


def _zip_link():
    zi = zipfile.ZipInfo("pets/cat/link.png")
    zi.create_system = 3  # Unix: the mode in the high half of the external attributes
    zi.external_attr = (stat.S_IFLNK | 0o777) << 16
    return _zip([(zi, b"/etc/passwd")])


UP = "/api/v1/datasets:upload?name=up&format=image_folder"
case("upload", "dataset upload: a gzip bomb", [422], field="archive")(
    lambda x: rb("POST", UP, _gzip_bomb(), ctype="application/gzip"))
case("upload", "dataset upload: a zip with a ../ entry", [422], field="archive")(
    lambda x: rb("POST", UP, _zip([("pets/../../evil.png", b"x")]), ctype="application/zip"))
case("upload", "dataset upload: a zip with a symbolic link", [422], field="archive")(
    lambda x: rb("POST", UP, _zip_link(), ctype="application/zip"))
case("upload", "dataset upload: a zip bomb (one entry declared 1000x its bytes)", [422],
     field="archive")(
    lambda x: rb("POST", UP, _zip([("pets/cat/0.png", b"\0" * (128 << 20))]),
                 ctype="application/zip"))

# ---- HTTP framing ---------------------------------------------------------------------------
case("http", "body over the limit (Content-Length 10 MB, not sent)", [413, "close"])(
    lambda x: b"POST /api/v1/experiments HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
              b"Content-Length: 10485760\r\n\r\n{")
case("http", "chunked body over the limit", [413, "close"])(
    lambda x: b"POST /api/v1/experiments HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
              b"Transfer-Encoding: chunked\r\n\r\n" + b"10000\r\n" + b" " * 0x10000 + b"\r\n" +
              b"10000\r\n" + b" " * 0x10000 + b"\r\n0\r\n\r\n")
case("http", "headers over the limit (40 KB header)", [431, "close"])(
    lambda x: b"GET /healthz HTTP/1.1\r\nHost: a\r\nX-Big: " + b"a" * 40000 + b"\r\n\r\n")
case("http", "2000 small headers", [431, 400, "close"])(
    lambda x: b"GET /healthz HTTP/1.1\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(2000)) +
    b"\r\n")
case("http", "URL of 20 KB", [414, 431, 400, "close"])(
    lambda x: b"GET /api/v1/jobs/" + b"a" * 20000 + b" HTTP/1.1\r\nHost: a\r\n\r\n")
case("http", "Content-Type text/plain", [415])(
    lambda x: rb("POST", E, exp_body(x), ctype="text/plain"))
case("http", "no Content-Type", [415])(lambda x: rb("POST", E, exp_body(x), ctype=None))
case("http", "bad chunk size", [400, "close"])(
    lambda x: b"POST /api/v1/experiments HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
              b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n")
case("http", "chunk size overflowing 64 bits", [400, 413, "close"])(
    lambda x: b"POST /api/v1/experiments HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
              b"Transfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFF\r\n{}\r\n0\r\n\r\n")
case("http", "smuggling: Content-Length and Transfer-Encoding", [400, "close"], n=2)(
    lambda x: b"POST /api/v1/experiments HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
              b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
              b"GET /api/v1/workers HTTP/1.1\r\nHost: a\r\n\r\n")
case("http", "smuggling: two different Content-Lengths", [400, "close"], n=2)(
    lambda x: b"POST /api/v1/experiments HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
              b"Content-Length: 2\r\nContent-Length: 40\r\n\r\n{}"
              b"GET /api/v1/workers HTTP/1.1\r\n\r\n")
case("http", "smuggling: 'Transfer-Encoding: xchunked'", [400, 501, 411, "close"], n=2)(
    lambda x: b"POST /api/v1/experiments HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
              b"Transfer-Encoding: xchunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
# strict framing (RFC 9112) where http-parser alone is lenient: 400, connection closed, and the
# request behind the bad one never answered
SMUGGLED = b"GET /api/v1/workers HTTP/1.1\r\nHost: a\r\n\r\n"
POST_E = b"POST /api/v1/experiments HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
case("http", "framing: 'Content-Length : 2' (space before the colon)", [400], n=2, closes=True)(
    lambda x: POST_E + b"Content-Length : 2\r\n\r\n{}" + SMUGGLED)
case("http", "framing: 'Transfer-Encoding : chunked' (space before the colon)", [400], n=2,
     closes=True)(
    lambda x: POST_E + b"Transfer-Encoding : chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n" + SMUGGLED)
case("http", "framing: chunk data followed by XX instead of CRLF", [400], n=2, closes=True)(
    lambda x: POST_E + b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}XX0\r\n\r\n" + SMUGGLED)
case("http", "framing: HTTP/9.9 request line", [400], closes=True)(
    lambda x: b"GET /healthz HTTP/9.9\r\nHost: a\r\n\r\n")
case("http", "framing: HTTP/2.0 request line on HTTP/1", [400], closes=True)(
    lambda x: b"GET /healthz HTTP/2.0\r\nHost: a\r\n\r\n")
case("http", "framing: obsolete line folding", [400], closes=True)(
    lambda x: b"GET /healthz HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n 2\r\n\r\n")
case("http", "framing: space inside a header name", [400], closes=True)(
    lambda x: b"GET /healthz HTTP/1.1\r\nHost: a\r\nX A: 1\r\n\r\n")
case("http", "framing: non-tchar byte in a header name", [400], closes=True)(
    lambda x: b"GET /healthz HTTP/1.1\r\nHost: a\r\nX[A]: 1\r\n\r\n")
case("http", "framing: bare CR inside a header line", [400], n=2, closes=True)(
    lambda x: b"GET /healthz HTTP/1.1\r\nHost: a\rX-A: 1\r\n\r\n" + SMUGGLED)
case("http", "framing: 'Transfer-Encoding: gzip, chunked'", [400], n=2, closes=True)(
    lambda x: POST_E + b"Transfer-Encoding: gzip, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n" + SMUGGLED)
case("http", "unknown method", [400, 405, 501, "close"])(
    lambda x: b"BREW /api/v1/jobs HTTP/1.1\r\nHost: a\r\n\r\n")
case("http", "known method, wrong route (PATCH /api/v1/jobs)", [405])(
    lambda x: rb("PATCH", "/api/v1/jobs", {}))
case("http", "garbage request line", [400, "close"])(lambda x: b"\x16\x03\x01\x02\x00\x01\x00\r\n\r\n")
case("http", "HTTP/2 preface on HTTP/1 port", [400, 505, "close"])(
    lambda x: b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
case("http", "bare LF line endings and no Host", [200, 400, "close"])(
    lambda x: b"GET /healthz HTTP/1.1\n\n")
case("http", "slowloris: one header byte a second", [408, "close"], pause=1.0, timeout=90)(
    lambda x: [b"GET /healthz HTTP/1.1\r\n"] + [b"X" for _ in range(45)])
case("http", "CRLF injected through a query value", [200, 422])(
    lambda x: rb("GET", "/api/v1/jobs?status=%0d%0aSet-Cookie:%20x=1"))
case("http", "SQL in a query filter", [200, 422])(
    lambda x: rb("GET", "/api/v1/jobs?status=queued%27%20OR%201%3D1%20--"))
case("http", "limit=-1 and limit beyond int", [422], field="limit")(
    lambda x: rb("GET", "/api/v1/jobs?limit=99999999999999999999"))
case("http", "100 pipelined requests in one write", [200], n=100)(
    lambda x: b"GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n" * 100)

# ---- worker protocol ------------------------------------------------------------------------
case("worker", "report for an unknown job", [404])(
    lambda x: report(x, {"worker_id": x["wrk"], "epoch": 1, "metrics": {}}, job="job-nope"))
case("worker", "report epoch 0", [422], field="epoch")(
    lambda x: report(x, {"worker_id": x["wrk"], "epoch": 0, "metrics": {}}))
case("worker", "report negative epoch", [422], field="epoch")(
    lambda x: report(x, {"worker_id": x["wrk"], "epoch": -2, "metrics": {}}))
case("worker", "report epoch past the job's target", [422], field="epoch")(
    lambda x: report(x, {"worker_id": x["wrk"], "epoch": 99, "metrics": {}}))
case("worker", "report epoch as a string", [422], field="epoch")(
    lambda x: report(x, {"worker_id": x["wrk"], "epoch": "2", "metrics": {}}))
case("worker", "metric value is a string", [422], field="metrics")(
    lambda x: report(x, {"worker_id": x["wrk"], "epoch": 2, "metrics": {"val_loss": "low"}}))
case("worker", "report without metrics", [422], field="metrics")(
    lambda x: report(x, {"worker_id": x["wrk"], "epoch": 2}))
case("worker", "duplicate report of an acknowledged epoch", [200],
     check=lambda x, r: (r.json() or {}).get("duplicate") is True)(
    lambda x: report(x, {"worker_id": x["wrk"], "epoch": 1, "metrics": {"val_accuracy": 0.99}}))
case("worker", "report from a worker that does not hold the job", [409, 404])(
    lambda x: report(x, {"worker_id": x["wrk2"], "epoch": 2, "metrics": {}}))
case("worker", "report from an unknown worker", [409, 404])(
    lambda x: report(x, {"worker_id": "wrk-ghost", "epoch": 2, "metrics": {}}))
case("worker", "lease from an unknown worker", [404])(
    lambda x: rb("POST", "/api/v1/workers/wrk-ghost/lease?wait=0", b"",
                 headers=as_worker(x, x["wrk"])))
case("worker", "lease with wait=-5", [422], field="wait")(
    lambda x: rb("POST", "/api/v1/workers/%s/lease?wait=-5" % x["wrk2"], b"",
                 headers=as_worker(x, x["wrk2"])))
case("worker", "lease with wait=abc", [422], field="wait")(
    lambda x: rb("POST", "/api/v1/workers/%s/lease?wait=abc" % x["wrk2"], b"",
                 headers=as_worker(x, x["wrk2"])))
case("worker", "heartbeat from an unknown worker", [404])(
    lambda x: rb("POST", "/api/v1/workers/wrk-ghost/heartbeat", {"jobs": []}))
case("worker", "complete with a status not in enum", [422], field="status")(
    lambda x: rb("POST", "/api/v1/jobs/%s/complete" % x["job"],
                 {"worker_id": x["wrk"], "status": "exploded"}, headers=as_worker(x, x["wrk"])))
case("worker", "complete from another worker", [409, 404])(
    lambda x: rb("POST", "/api/v1/jobs/%s/complete" % x["job"],
                 {"worker_id": x["wrk2"], "status": "done"}, headers=as_worker(x, x["wrk2"])))
# Who may write: a worker is whoever its credential proves, not whoever it says it is.
ART = "/api/v1/jobs/%s/artifacts/model.bin"
OCTET = {"Content-Type": "application/octet-stream"}
FORGED = "Bearer %s.%s"
def no_model(x, r):
    return not os.path.exists("%s/artifacts/%s/model.bin" % (x["data"], x["job"]))


case("worker", "artifact upload with no credential", [401], field="Authorization",
     check=no_model)(
    lambda x: rb("PUT", ART % x["job"], b"EVIL", ctype="application/octet-stream"))
case("worker", "artifact upload by a worker that does not hold the lease", [403],
     field="Authorization", check=no_model)(
    lambda x: rb("PUT", ART % x["job"], b"EVIL", ctype="application/octet-stream",
                 headers=as_worker(x, x["wrk2"])))
case("worker", "artifact upload with a forged worker secret", [401], field="Authorization",
     check=no_model)(
    lambda x: rb("PUT", ART % x["job"], b"EVIL", ctype="application/octet-stream",
                 headers={"Authorization": FORGED % (x["wrk"], "0" * 64)}))
case("worker", "report carrying a victim's worker_id", [403], field="worker_id")(
    lambda x: report(x, {"worker_id": x["wrk"], "epoch": 2, "metrics": {}},
                     auth=as_worker(x, x["wrk2"])))
case("worker", "report with no credential", [401], field="Authorization")(
    lambda x: report(x, {"worker_id": x["wrk"], "epoch": 2, "metrics": {}}, auth={}))
case("worker", "report with a forged worker secret", [401], field="Authorization")(
    lambda x: report(x, {"worker_id": x["wrk"], "epoch": 2, "metrics": {}},
                     auth={"Authorization": FORGED % (x["wrk"], "f" * 64)}))
case("worker", "complete carrying a victim's worker_id", [403], field="worker_id")(
    lambda x: rb("POST", "/api/v1/jobs/%s/complete" % x["job"],
                 {"worker_id": x["wrk"], "status": "done"}, headers=as_worker(x, x["wrk2"])))
case("worker", "heartbeat for another worker", [403], field="worker_id")(
    lambda x: rb("POST", "/api/v1/workers/%s/heartbeat" % x["wrk"], {"jobs": [x["job"]]},
                 headers=as_worker(x, x["wrk2"])))
case("worker", "lease with a credential that is not a bearer token", [401],
     field="Authorization")(
    lambda x: rb("POST", "/api/v1/workers/%s/lease?wait=0" % x["wrk"], b"",
                 headers={"Authorization": "Basic " + x["auth"][x["wrk"]]["Authorization"][7:]}))
# Reports checked against the job: the next epoch only, known metric names, natural ranges.
case("worker", "report skipping ahead (epoch 4 after 1)", [422], field="epoch")(
    lambda x: report(x, {"worker_id": x["wrk"], "epoch": 4, "metrics": {"val_accuracy": 0.6}}))
case("worker", "report with a 50 KB metric name", [422], field="metrics")(
    lambda x: report(x, {"worker_id": x["wrk"], "epoch": 2, "metrics": {"k" * 50000: 1}}))
case("worker", "report with an unknown metric name", [422], field="metrics")(
    lambda x: report(x, {"worker_id": x["wrk"], "epoch": 2, "metrics": {"val_acc": 0.5}}))
case("worker", "report val_accuracy 1.797e308", [422], field="metrics.val_accuracy")(
    lambda x: report(x, {"worker_id": x["wrk"], "epoch": 2,
                         "metrics": {"val_accuracy": 1.797e308}}))
case("worker", "report a negative loss", [422], field="metrics.val_loss")(
    lambda x: report(x, {"worker_id": x["wrk"], "epoch": 2, "metrics": {"val_loss": -1}}))
case("worker", "report a fractional epoch metric", [422], field="metrics.epoch")(
    lambda x: report(x, {"worker_id": x["wrk"], "epoch": 2, "metrics": {"epoch": 1.5}}))
case("worker", "cancel an unknown job", [404])(
    lambda x: rb("POST", "/api/v1/jobs/job-nope:cancel", b"{}"))
case("worker", "delete a dataset in use", [409])(
    lambda x: rb("DELETE", "/api/v1/datasets/%s" % x["ds"]))
