"""`hone login`, `whoami`, `user`, `key` and `logout` against a real hone-controller with auth on:
the config file is written 0600 (its folder 0700) at $HONE_CONFIG or ~/.config/hone/config, holds
url and token (never the key), and later commands use it; a user is refused admin commands; a
revoked key's token answers 401 and the CLI says to run hone login; logout removes the file.
Secrets (issue 26): the key from --key-file (a warning when others may read the file), --key -
(stdin) or $HONE_API_KEY, the help preferring the file; a user mints a key with a key of hers, not
her token; an admin disables and enables a user; `hone worker list` is the admin's."""
import json
import os
import shutil
import stat
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "controller"))
from hone_test import Controller, tempdir  # noqa: E402

ADMIN = "cli-admin-key-0123456789"


def hone(binary, env, *args, stdin=None):
    e = dict(os.environ)
    for k in ("HONE_URL", "HONE_TOKEN", "HONE_CONFIG", "HONE_API_KEY"):
        e.pop(k, None)
    e.update(env)
    p = subprocess.run([binary] + list(args), capture_output=True, text=True, timeout=60, env=e,
                       input=stdin if stdin is not None else "")
    return p.returncode, p.stdout, p.stderr


def secrets(hone_bin, c, d, env, key, uid):
    """The key from a file, stdin or the environment; minting with a key; disable and enable."""
    aenv = dict(env, HONE_CONFIG=os.path.join(d, "alice2", "conf"))
    rc, out, err = hone(hone_bin, aenv, "login", "--help")
    check(rc == 0 and "--key-file" in out and "prefer --key-file" in out, ("login help", out))
    rc, out, err = hone(hone_bin, aenv, "login", "--url", c.base)
    check(rc == 2 and "--key-file" in err, ("login without a key", rc, out, err))
    kf = os.path.join(d, "alice.key")
    with open(kf, "w") as f:
        f.write(key["key"] + "\n")
    os.chmod(kf, 0o600)
    rc, out, err = hone(hone_bin, aenv, "login", "--url", c.base, "--key-file", kf)
    check(rc == 0 and "as alice" in out and "warning" not in err, ("--key-file", rc, out, err))
    os.chmod(kf, 0o644)
    rc, out, err = hone(hone_bin, aenv, "login", "--url", c.base, "--key-file", kf)
    check(rc == 0 and "warning" in err and "chmod 600" in err and key["key"] not in err,
          ("a readable --key-file", rc, out, err))
    os.chmod(kf, 0o600)
    rc, out, err = hone(hone_bin, aenv, "login", "--url", c.base, "--key-file", kf + ".none")
    check(rc == 1 and "--key-file" in err, ("a missing --key-file", rc, out, err))
    rc, out, err = hone(hone_bin, aenv, "login", "--url", c.base, "--key", "-",
                        stdin=key["key"] + "\n")
    check(rc == 0 and "as alice" in out, ("--key -", rc, out, err))
    rc, out, err = hone(hone_bin, dict(aenv, HONE_API_KEY=key["key"]), "login", "--url", c.base)
    check(rc == 0 and "as alice" in out, ("$HONE_API_KEY", rc, out, err))
    # minting: her token may not, her key may
    rc, out, err = hone(hone_bin, aenv, "key", "create")
    check(rc == 1 and "API key" in err, ("a token minting a key", rc, out, err))
    rc, out, err = hone(hone_bin, aenv, "--json", "key", "create", "--key-file", kf)
    check(rc == 0 and json.loads(out)["parent_key"] == key["id"], ("minting with a key", rc, out,
                                                                    err))
    rc, out, err = hone(hone_bin, aenv, "worker", "list")
    check(rc == 1 and "admins only" in err, ("a user's worker list", rc, out, err))
    rc, out, err = hone(hone_bin, env, "worker", "list")
    check(rc == 0, ("the admin's worker list", rc, out, err))
    # disabled: her token and key stop; enabled: the key works again
    rc, out, err = hone(hone_bin, env, "user", "disable", uid)
    check(rc == 0 and "disabled" in out, (rc, out, err))
    rc, out, err = hone(hone_bin, aenv, "whoami")
    check(rc == 1 and "disabled" in err, ("a disabled user's token", rc, out, err))
    rc, out, err = hone(hone_bin, aenv, "login", "--url", c.base, "--key-file", kf)
    check(rc == 1 and "disabled" in err, ("a disabled user's login", rc, out, err))
    rc, out, err = hone(hone_bin, env, "user", "enable", uid)
    check(rc == 0 and "enabled" in out, (rc, out, err))
    rc, out, err = hone(hone_bin, aenv, "login", "--url", c.base, "--key-file", kf)
    check(rc == 0 and "as alice" in out, ("login once enabled", rc, out, err))


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def main():
    hone_bin, ctl_bin = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    d = tempdir()
    cfg = os.path.join(d, "controller.yaml")
    with open(cfg, "w") as f:
        f.write("auth: {admin_key: %s}\n" % ADMIN)
    c = Controller(ctl_bin, os.path.join(d, "data"), config=cfg).start()
    try:
        home = os.path.join(d, "home")
        os.makedirs(home)
        env = {"HOME": home}
        conf = os.path.join(home, ".config", "hone", "config")
        rc, out, err = hone(hone_bin, env, "whoami", "--url", c.base)
        check(rc == 1 and "hone login" in err, ("no token", rc, out, err))
        rc, out, err = hone(hone_bin, env, "login", "--url", c.base, "--key", "wrong")
        check(rc == 1 and not os.path.exists(conf), ("bad key", rc, out, err))
        rc, out, err = hone(hone_bin, env, "login", "--url", c.base, "--key", ADMIN)
        check(rc == 0 and "as admin" in out, (rc, out, err))
        check(mode(conf) == 0o600 and mode(os.path.dirname(conf)) == 0o700,
              ("modes", oct(mode(conf)), oct(mode(os.path.dirname(conf)))))
        text = open(conf).read()
        check("url=%s\n" % c.base in text and "token=ht_" in text and ADMIN not in text, text)
        # later commands take url and token from the file
        rc, out, err = hone(hone_bin, env, "--json", "whoami")
        check(rc == 0 and json.loads(out)["id"] == "admin", (rc, out, err))
        rc, out, err = hone(hone_bin, env, "user", "create", "alice")
        check(rc == 0 and out.startswith("usr-"), (rc, out, err))
        uid = out.strip()
        rc, out, err = hone(hone_bin, env, "--json", "key", "create", "--user", uid)
        check(rc == 0, (rc, out, err))
        key = json.loads(out)
        # alice logs in at $HONE_CONFIG
        alt = os.path.join(d, "alice", "conf")
        aenv = dict(env, HONE_CONFIG=alt)
        rc, out, err = hone(hone_bin, aenv, "login", "--url", c.base, "--key", key["key"])
        check(rc == 0 and "as alice" in out and mode(alt) == 0o600, (rc, out, err))
        check(key["key"] not in open(alt).read(), "the key itself was saved")
        rc, out, err = hone(hone_bin, aenv, "--json", "whoami")
        check(rc == 0 and json.loads(out)["id"] == uid, (rc, out, err))
        rc, out, err = hone(hone_bin, aenv, "user", "list")
        check(rc == 1 and "admin" in err, ("alice lists users", rc, out, err))
        rc, out, err = hone(hone_bin, aenv, "key", "list")
        check(rc == 0 and key["id"] in out and key["key"] not in out, (rc, out, err))
        # a token for this url is not sent to another one
        rc, out, err = hone(hone_bin, aenv, "--url", c.base.replace("127.0.0.1", "localhost"),
                            "whoami")
        check(rc == 1 and "hone login" in err, ("token sent elsewhere", rc, err))
        secrets(hone_bin, c, d, env, key, uid)
        rc, out, err = hone(hone_bin, env, "key", "revoke", key["id"], "--user", uid)
        check(rc == 0, (rc, out, err))
        rc, out, err = hone(hone_bin, aenv, "whoami")
        check(rc == 1 and "hone login --url" in err, ("revoked", rc, out, err))
        rc, out, err = hone(hone_bin, aenv, "logout")
        check(rc == 0 and not os.path.exists(alt), (rc, out, err))
        print("cli login: ok")
    finally:
        c.stop()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
