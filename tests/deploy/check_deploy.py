#!/usr/bin/env python3
"""The deployment files of deploy/ checked without a cluster or a Slurm installation.

  check_deploy.py yamllint SRC
      yamllint, strict, with deploy/.yamllint, over every YAML file of deploy/.
  check_deploy.py kubernetes SRC VYRED VYRECTL
      Every object of deploy/kubernetes/ against the Kubernetes API models of Debian's
      python3-kubernetes (an unknown field, a value of the wrong type or a missing required field
      fails); then what ties the files together (the socket folder, the group, the GPU count, the
      ConfigMap and the namespace); then a real vyred (reference backend) started with the
      ConfigMap's vyred.conf, against which the probes and the example client's command run.
  check_deploy.py slurm SRC VYRED VYRECTL
      gres.conf against the job script's --gres; `bash -n` of the job script; then the job script
      itself on one node, with an srun that runs each step in place, a real vyred started by it
      and its client step answered.

kubectl is not used: its client-side dry run (`kubectl apply --dry-run=client`, even with
--validate=false) asks a cluster's API server which kinds exist, so without a cluster it checks
nothing; Debian 12's kubectl (kubernetes-client) behaves the same. Exit status: 0 when every
check passed, 1 when one failed, 77 (skip) when the tool a mode needs is not installed.
"""
import configparser
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

FAILURES = []


def check(ok, what):
    print(("ok - " if ok else "FAIL - ") + what)
    if not ok:
        FAILURES.append(what)


def skip(why, fix):
    print("SKIP - %s. Fix: %s" % (why, fix))
    sys.exit(77)


def finish():
    print("# %d failed" % len(FAILURES))
    sys.exit(1 if FAILURES else 0)


# --- yamllint --------------------------------------------------------------------------------

def mode_yamllint(src):
    tool = shutil.which("yamllint")
    if not tool:
        skip("yamllint is not installed", "apt-get install yamllint")
    deploy = os.path.join(src, "deploy")
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(deploy) for f in fs
                   if f.endswith((".yaml", ".yml")))
    check(len(files) >= 4, "deploy/ holds the manifests (%d YAML files)" % len(files))
    r = subprocess.run([tool, "--strict", "-c", os.path.join(deploy, ".yamllint")] + files,
                       capture_output=True, text=True)
    sys.stdout.write(r.stdout + r.stderr)
    check(r.returncode == 0, "yamllint --strict: exit %d" % r.returncode)
    finish()


# --- Kubernetes ------------------------------------------------------------------------------

# apiVersion and kind of every object deploy/kubernetes may hold, and its model.
MODELS = {
    ("v1", "Namespace"): "V1Namespace",
    ("v1", "ConfigMap"): "V1ConfigMap",
    ("v1", "Pod"): "V1Pod",
    ("apps/v1", "DaemonSet"): "V1DaemonSet",
}


def walk(value, typ, at, kc):
    """Whether `value` fits the model type `typ`; each misfit is reported at `at`."""
    if typ.startswith("list["):
        if not isinstance(value, list):
            return check(False, "%s: a list expected" % at)
        for i, item in enumerate(value):
            walk(item, typ[5:-1], "%s[%d]" % (at, i), kc)
        return
    if typ.startswith("dict("):
        if not isinstance(value, dict):
            return check(False, "%s: a map expected" % at)
        inner = typ[typ.index(",") + 1:-1].strip()
        for k, v in value.items():
            walk(v, inner, "%s.%s" % (at, k), kc)
        return
    simple = {"str": str, "bool": bool, "int": int, "float": (int, float), "datetime": str}
    if typ in simple:
        good = isinstance(value, simple[typ]) and not (typ == "int" and isinstance(value, bool))
        if not good:
            check(False, "%s: %r is not a %s" % (at, value, typ))
        return
    if typ == "object":
        return
    model = getattr(kc, typ)
    if not isinstance(value, dict):
        return check(False, "%s: a map (%s) expected" % (at, typ))
    fields = {json: attr for attr, json in model.attribute_map.items()}
    for key, v in value.items():
        if key not in fields:
            check(False, "%s: %s has no field %r" % (at, typ, key))
        else:
            walk(v, model.openapi_types[fields[key]], "%s.%s" % (at, key), kc)


def load_documents(path, yaml):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def run_daemon(vyred, vyrectl, conf_text, tmp):
    """A vyred on the reference backend reading `conf_text`, its socket and cache moved into
    tmp and its socket group left out (the group vyred exists in the image, not here)."""
    conf = os.path.join(tmp, "vyred.conf")
    with open(conf, "w") as f:
        f.write(conf_text)
    sock = os.path.join(tmp, "vyred.sock")
    log = open(os.path.join(tmp, "vyred.log"), "w")
    proc = subprocess.Popen([vyred, "--config", conf, "--socket", sock, "--cache-dir",
                             os.path.join(tmp, "cache"), "--backend", "reference",
                             "--set", "socket_group="], stdout=log, stderr=log)
    for _ in range(600):
        if subprocess.run([vyrectl, "--socket", sock, "ping", "--count", "1"],
                          capture_output=True).returncode == 0:
            return proc, sock
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    with open(os.path.join(tmp, "vyred.log")) as f:
        sys.stdout.write(f.read())
    check(False, "vyred did not start with the ConfigMap's vyred.conf")
    proc.kill()
    proc.wait()
    finish()


def stop_daemon(proc):
    proc.send_signal(signal.SIGTERM)
    check(proc.wait(timeout=60) == 0, "vyred stops with status 0 on SIGTERM")


def mode_kubernetes(src, vyred, vyrectl):
    try:
        import yaml
    except ImportError:
        skip("python3-yaml is not installed", "apt-get install python3-yaml")
    try:
        import kubernetes.client as kc
    except ImportError:
        skip("python3-kubernetes is not installed", "apt-get install python3-kubernetes")
    base = os.path.join(src, "deploy", "kubernetes")
    objects = {}
    for d, _, fs in os.walk(base):
        for f in sorted(fs):
            if not f.endswith(".yaml"):
                continue
            path = os.path.join(d, f)
            rel = os.path.relpath(path, src)
            for i, doc in enumerate(load_documents(path, yaml)):
                key = (doc.get("apiVersion"), doc.get("kind"))
                at = "%s[%d] %s" % (rel, i, doc.get("kind"))
                if key not in MODELS:
                    check(False, "%s: no model for apiVersion %s kind %s" % (at, *key))
                    continue
                before = len(FAILURES)
                walk(doc, MODELS[key], at, kc)
                try:
                    kc.ApiClient()._ApiClient__deserialize(doc, MODELS[key])
                except (ValueError, TypeError) as e:
                    check(False, "%s: %s" % (at, e))
                check(len(FAILURES) == before, "%s fits the %s model" % (at, MODELS[key]))
                objects[doc["kind"]] = doc

    ns, cm, ds, pod = (objects.get(k) for k in ("Namespace", "ConfigMap", "DaemonSet", "Pod"))
    check(None not in (ns, cm, ds, pod), "a Namespace, a ConfigMap, a DaemonSet and a Pod")
    if None in (ns, cm, ds, pod):
        finish()
    name = ns["metadata"]["name"]
    check(all(o["metadata"].get("namespace") == name for o in (cm, ds, pod)),
          "every object is in namespace %s" % name)
    conf_text = cm["data"]["vyred.conf"]
    conf = configparser.ConfigParser()
    conf.read_string(conf_text)
    socket_path = conf["daemon"]["socket_path"]
    sock_dir = os.path.dirname(socket_path)

    spec = ds["spec"]["template"]["spec"]
    vy = spec["containers"][0]
    vols = {v["name"]: v for v in spec["volumes"]}
    mounts = {m["mountPath"]: m["name"] for m in vy["volumeMounts"]}
    check(vols.get(mounts.get(sock_dir), {}).get("hostPath", {}).get("path") == sock_dir,
          "the daemon mounts the node's %s (hostPath) at %s" % (sock_dir, sock_dir))
    conf_vol = vols.get(mounts.get("/etc/vyred"), {})
    check(conf_vol.get("configMap", {}).get("name") == cm["metadata"]["name"] and
          vy["args"] == ["--config", "/etc/vyred/vyred.conf"],
          "the daemon reads vyred.conf from the ConfigMap")
    cache_dir = conf["cache"]["cache_dir"]
    check(vols.get(mounts.get(cache_dir), {}).get("hostPath", {}).get("path") == cache_dir,
          "the disk cache %s is on the node (hostPath), kept across restarts" % cache_dir)
    gpus = vy["resources"]["limits"].get("nvidia.com/gpu")
    check(gpus is not None and gpus == spec["nodeSelector"].get("nvidia.com/gpu.count"),
          "the daemon holds nvidia.com/gpu %s, the GPU count of the nodes it selects" % gpus)
    check(conf["devices"]["devices"] == "all", "the daemon opens every GPU it is given")
    caps = {e["name"]: e.get("value") for e in vy.get("env", [])}
    check("graphics" in caps.get("NVIDIA_DRIVER_CAPABILITIES", ""),
          "the container toolkit mounts the driver's Vulkan (graphics) libraries")
    group = conf["daemon"]["socket_group"]
    with open(os.path.join(src, "deploy", "container", "Containerfile")) as f:
        made = re.search(r"groupadd --system --gid (\d+) (\S+)", f.read())
    gid = int(made.group(1)) if made and made.group(2) == group else None
    check(gid is not None, "the image creates the socket group %s" % group)
    check(gid in spec["securityContext"].get("supplementalGroups", []),
          "the daemon is in group %s, so it may give the socket to it" % gid)

    pspec = pod["spec"]
    client = pspec["containers"][0]
    pvols = {v["name"]: v for v in pspec["volumes"]}
    pmounts = {m["mountPath"]: m["name"] for m in client["volumeMounts"]}
    check(pvols.get(pmounts.get(sock_dir), {}).get("hostPath", {}).get("path") == sock_dir,
          "the client mounts the same hostPath at the same place")
    env = {e["name"]: e.get("value") for e in client.get("env", [])}
    check(env.get("VYRED_SOCKET") == socket_path, "the client's VYRED_SOCKET is the socket")
    check(gid in pspec["securityContext"].get("supplementalGroups", []) and
          pspec["securityContext"].get("runAsNonRoot") is True,
          "the client joins group %s and is no administrator (not uid 0)" % gid)
    check("nvidia.com/gpu" not in client.get("resources", {}).get("limits", {}),
          "the client asks for no GPU: the daemon shares its own")

    with tempfile.TemporaryDirectory(prefix="deploy-k8s.") as tmp:
        proc, sock = run_daemon(vyred, vyrectl, conf_text, tmp)
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            cmd = [a.replace(socket_path, sock) for a in vy[probe]["exec"]["command"]]
            cmd[0] = vyrectl if cmd[0] == "vyrectl" else cmd[0]
            r = subprocess.run(cmd, capture_output=True, text=True)
            check(r.returncode == 0, "the %s passes%s"
                  % (probe, "" if r.returncode == 0 else ": " + r.stderr.strip()))
        script = client["command"][-1]
        env = dict(os.environ, VYRED_SOCKET=sock,
                   PATH=os.path.dirname(os.path.abspath(vyrectl)) + ":" + os.environ["PATH"])
        script = script.replace("/usr/share/vyred/saxpy.json",
                                os.path.join(src, "tests", "programs", "saxpy.json"))
        r = subprocess.run(client["command"][:-1] + [script], capture_output=True, text=True,
                           env=env)
        sys.stdout.write(r.stdout)
        ok = r.returncode == 0 and re.search(r"y\b.*12.*24.*36.*48", r.stdout, re.S)
        check(ok, "the client's command lists the devices and computes y = 2 x + y%s"
              % ("" if ok else ": " + r.stderr.strip()))
        stop_daemon(proc)
    finish()


# --- Slurm -----------------------------------------------------------------------------------

FAKE_SRUN = """#!/bin/sh
# srun of one node: drop the options and run the step here.
while [ $# -gt 0 ]; do
	case $1 in --*) shift ;; *) break ;; esac
done
exec "$@"
"""


def mode_slurm(src, vyred, vyrectl):
    base = os.path.join(src, "deploy", "slurm")
    job = os.path.join(base, "vyred-job.sh")
    with open(os.path.join(base, "gres.conf")) as f:
        lines = [ln.split() for ln in f if ln.strip() and not ln.startswith("#")]
    with open(job) as f:
        text = f.read()
    gres = [dict(kv.split("=", 1) for kv in ln) for ln in lines]
    check(all(g.get("Name") == "gpu" and re.fullmatch(r"/dev/nvidia\d+", g.get("File", ""))
              for g in gres), "gres.conf: every line a gpu with its /dev/nvidiaN file")
    want = re.search(r"#SBATCH --gres=gpu:(\w+):(\d+)", text)
    check(want is not None and all(g.get("Type") == want.group(1) for g in gres) and
          len(gres) == int(want.group(2)),
          "the job asks for every GPU gres.conf declares (%d)" % len(gres))
    check(all(("--gres=gpu:%s:%s" % want.groups()) in ln
              for ln in text.splitlines() if ln.startswith("srun") and "vyred" in ln) if want
          else False, "the daemon step holds the GPUs the job asked for")
    r = subprocess.run(["bash", "-n", job], capture_output=True, text=True)
    check(r.returncode == 0, "bash -n %s %s" % (os.path.relpath(job, src), r.stderr.strip()))

    with tempfile.TemporaryDirectory(prefix="deploy-slurm.") as tmp:
        bindir = os.path.join(tmp, "bin")
        os.mkdir(bindir)
        srun = os.path.join(bindir, "srun")
        with open(srun, "w") as f:
            f.write(FAKE_SRUN)
        os.chmod(srun, 0o755)
        for tool in (vyred, vyrectl):
            os.symlink(os.path.abspath(tool), os.path.join(bindir, os.path.basename(tool)))
        env = dict(os.environ, PATH=bindir + ":" + os.environ["PATH"], TMPDIR=tmp,
                   SLURM_JOB_ID="4242", SLURM_JOB_NUM_NODES="1", USER="slurmtest",
                   VYRED_CACHE=os.path.join(tmp, "cache"), VYRED_BACKEND="reference")
        env.pop("VYRED_SOCKET", None)
        r = subprocess.run(["bash", job], capture_output=True, text=True, env=env, timeout=120)
        sys.stdout.write(r.stdout)
        ok = r.returncode == 0 and "device 0: vyre reference interpreter" in r.stdout
        check(ok, "the job script on one node: its vyred starts, the client step reaches it at "
              "$TMPDIR/vyred-$SLURM_JOB_ID/vyred.sock, and the job ends (exit %d)%s"
              % (r.returncode, "" if ok else ": " + r.stderr.strip()[-400:]))
        check("stopped" in r.stderr, "the daemon stopped on SIGTERM through srun")
    finish()


def main(argv):
    if len(argv) >= 3 and argv[1] == "yamllint":
        mode_yamllint(argv[2])
    elif len(argv) >= 5 and argv[1] == "kubernetes":
        mode_kubernetes(argv[2], argv[3], argv[4])
    elif len(argv) >= 5 and argv[1] == "slurm":
        mode_slurm(argv[2], argv[3], argv[4])
    print(__doc__, file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
    main(sys.argv)
