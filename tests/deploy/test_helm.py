#!/usr/bin/env python3
"""Renders deploy/helm/faultline with tests/deploy/helmrender (helm's engine, offline) under
several sets of values, and checks the manifests: valid Kubernetes objects (k8s_check), and
the properties the chart promises (security contexts, mounts, probes, NODE_NAME, the config
the daemon gets, hot-reloadable rules, the native sidecar, monitoring objects). One file of ~700 lines: one case
per promise of the chart, all over one rendering helper.

Environment: HELMRENDER=path to a built helmrender (otherwise it is built into
$FAULTLINE_BUILD_DIR/deploy or a temporary directory); FAULTLINE_BIN=the faultline binary
(optional: then the rendered catalog ConfigMap is checked with `faultline check`).
"""

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deploy_common import CHART_DIR, SOURCE_DIR, Cases, promtool_check_rules, use_debian_python  # noqa: E402

use_debian_python("yaml", "kubernetes")

import yaml  # noqa: E402

import k8s_check  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
STATE_MOUNT = "/var/lib/faultline"


class UniqueKeyLoader(yaml.SafeLoader):
    """Rejects duplicate keys, which the API server would reject or silently merge."""


def _construct_mapping(loader, node, deep=False):
    keys = set()
    for k, _ in node.value:
        key = loader.construct_object(k, deep=deep)
        if key in keys:
            raise yaml.constructor.ConstructorError(None, None, "duplicate key %r" % (key,), k.start_mark)
        keys.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def helmrender_path():
    p = os.environ.get("HELMRENDER")
    if p and os.access(p, os.X_OK):
        return p
    base = os.environ.get("FAULTLINE_BUILD_DIR")
    out = os.path.join(base, "deploy") if base else tempfile.mkdtemp(prefix="helmrender-")
    subprocess.run([os.path.join(SOURCE_DIR, "tests", "deploy", "helmrender", "build.sh"), out], check=True)
    return os.path.join(out, "helmrender")


HELMRENDER = helmrender_path()


class Render:
    def __init__(self, *args, name="fl", namespace="faultline-system", kube="v1.30.0", strict=True, chart=CHART_DIR):
        cmd = [HELMRENDER, "--name", name, "--namespace", namespace, "--kube-version", kube]
        if strict:
            cmd.append("--strict")
        cmd += list(args) + [chart]
        self.cmd = cmd
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.rc, self.out, self.err = p.returncode, p.stdout, p.stderr
        self.docs = []
        if self.rc == 0 and "--show-notes" not in args:
            self.docs = [d for d in yaml.load_all(self.out, Loader=UniqueKeyLoader) if d]
        self.release = name
        self.namespace = namespace

    def ok(self):
        assert self.rc == 0, "render failed: %s\n%s" % (" ".join(self.cmd), self.err)
        errs = k8s_check.check_manifests(self.docs)
        assert not errs, "invalid manifests:\n" + "\n".join(errs)
        return self

    def all(self, kind):
        return [d for d in self.docs if d["kind"] == kind]

    def one(self, kind, name_suffix=""):
        found = [d for d in self.all(kind) if d["metadata"]["name"].endswith(name_suffix)]
        assert len(found) == 1, "expected one %s *%s, found %s" % (
            kind, name_suffix, [d["metadata"]["name"] for d in self.all(kind)])
        return found[0]

    def configmap(self, name):
        for d in self.all("ConfigMap"):
            if d["metadata"]["name"] == name:
                return d
        return None


def pod_spec(doc):
    return doc["spec"]["template"]["spec"]


def container(spec, name, init=False):
    for c in spec.get("initContainers" if init else "containers") or []:
        if c["name"] == name:
            return c
    raise AssertionError("no %scontainer %s" % ("init " if init else "", name))


def mount_of(c, volume):
    for m in c.get("volumeMounts") or []:
        if m["name"] == volume:
            return m
    raise AssertionError("container %s does not mount %s" % (c["name"], volume))


def volume(spec, name):
    for v in spec.get("volumes") or []:
        if v["name"] == name:
            return v
    raise AssertionError("no volume %s" % name)


def env_of(c, name):
    for e in c.get("env") or []:
        if e["name"] == name:
            return e
    raise AssertionError("container %s has no env %s" % (c["name"], name))


def rendered_rules(r):
    """The rule files the chart renders into ConfigMaps beyond the repository's catalog (rules.custom), as
    {name: text}."""
    catalog = set()
    for root, _, files in os.walk(os.path.join(SOURCE_DIR, "rules")):
        for name in files:
            if name.endswith(".yaml"):
                with open(os.path.join(root, name)) as f:
                    catalog.update(re.findall(r"^id:\s*(\S+)", f.read(), re.M))
    out = {}
    for d in (r.docs if r is not None else []):
        if d.get("kind") != "ConfigMap":
            continue
        for key, text in (d.get("data") or {}).items():
            if key.endswith((".yaml", ".yml")) and re.search(r"^id:\s", text or "", re.M) \
                    and re.search(r"^events:", text, re.M) \
                    and not set(re.findall(r"^id:\s*(\S+)", text, re.M)) <= catalog:
                out[key] = text
    return out


def daemon_accepts(cfg, r=None):
    """The real daemon validates a rendered config.yaml (`faultline run --check-config`), with the repository's rules
    and the chart's custom rules (its ConfigMaps) standing in for the mounts that only exist in a pod: an override
    naming a rule that none of them has is an error, as at start-up."""
    binary = os.environ.get("FAULTLINE_BIN")
    if not binary or not os.access(binary, os.X_OK):
        raise AssertionError("FAULTLINE_BIN is not set: cannot check the rendered config with the daemon")
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "config.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(cfg, f)
        extra = []
        for key, text in rendered_rules(r).items():
            rule = os.path.join(tmp, "custom", key)
            os.makedirs(os.path.dirname(rule), exist_ok=True)
            with open(rule, "w") as f:
                f.write(text)
            extra = ["--rules", os.path.join(tmp, "custom")]
        p = subprocess.run([binary, "run", "--config", path, "--rules", os.path.join(SOURCE_DIR, "rules")] + extra +
                           ["--state-dir", os.path.join(tmp, "state"), "--check-config"],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, "faultline rejects the rendered config:\n" + p.stderr[-3000:]


def config_of(r, c, spec):
    """The config.yaml a faultline container runs with: --config PATH resolved through its mounts."""
    args = c.get("args") or []
    assert args[:1] == ["run"] and "--config" in args, "args %s do not run --config" % args
    path = args[args.index("--config") + 1]
    for m in c["volumeMounts"]:
        if path.startswith(m["mountPath"].rstrip("/") + "/"):
            assert "subPath" not in m, "config mounted with subPath (no updates)"
            v = volume(spec, m["name"])
            assert "configMap" in v, "config volume is not a ConfigMap"
            cm = r.configmap(v["configMap"]["name"])
            assert cm is not None, "ConfigMap %s is not rendered" % v["configMap"]["name"]
            key = path[len(m["mountPath"].rstrip("/")) + 1:]
            cfg = yaml.safe_load(cm["data"][key])
            daemon_accepts(cfg, r)
            return cfg
    raise AssertionError("config %s is on no mount" % path)


def check_faultline_container_hardening(c, spec, non_root):
    sc = c.get("securityContext") or {}
    psc = spec.get("securityContext") or {}
    assert sc.get("readOnlyRootFilesystem") is True, "readOnlyRootFilesystem"
    if sc.get("privileged"):
        return
    assert sc.get("allowPrivilegeEscalation") is False, "allowPrivilegeEscalation must be false"
    assert sc.get("capabilities", {}).get("drop") == ["ALL"], "capabilities.drop must be [ALL]"
    assert not sc.get("capabilities", {}).get("add"), "no capabilities added"
    seccomp = (sc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type")
    assert seccomp == "RuntimeDefault", "seccompProfile RuntimeDefault, got %s" % seccomp
    uid = sc.get("runAsUser", psc.get("runAsUser"))
    if non_root:
        assert sc.get("runAsNonRoot", psc.get("runAsNonRoot")) is True, "runAsNonRoot"
        assert isinstance(uid, int) and uid > 0, "runAsUser %r" % uid
    else:
        assert uid == 0, "the agent runs as uid 0 (owner of the 0640 CRI logs), got %r" % uid


def check_rule_mounts(r, c, spec, cfg):
    """Every rules path in the config is a ConfigMap directory mount (no subPath) or the image catalog."""
    paths = cfg["rules"]["paths"]
    assert paths, "no rule paths"
    for p in paths:
        if p == "/usr/share/faultline/rules":
            continue
        m = [m for m in c["volumeMounts"] if m["mountPath"] == p]
        assert m, "rule path %s is not mounted" % p
        assert "subPath" not in m[0], "rules mounted with subPath never update"
        assert m[0].get("readOnly") is True
        v = volume(spec, m[0]["name"])
        assert "configMap" in v, "rule volume %s is not a ConfigMap" % v["name"]
    assert cfg["rules"]["watch"] is True


def probes(c, port_name):
    lp, rp = c.get("livenessProbe"), c.get("readinessProbe")
    assert lp and lp["httpGet"]["path"] == "/healthz", "liveness probe on /healthz"
    assert lp["httpGet"]["port"] == port_name
    return lp, rp


# ------------------------------------------------------------------------------------------------

def catalog_files():
    root = os.path.join(SOURCE_DIR, "rules")
    out = {}
    for d, dirs, files in os.walk(root, followlinks=True):
        dirs[:] = [x for x in dirs if x != "tests" and not x.startswith(".")]
        for f in files:
            if f.endswith((".yaml", ".yml")):
                out[f] = os.path.join(d, f)
    return out


def t_default(cases):
    r = Render()
    cases.run("default values render to valid Kubernetes objects", r.ok)
    if r.rc != 0:
        return
    kinds = sorted({d["kind"] for d in r.docs})

    def expected_kinds():
        assert kinds == ["ConfigMap", "DaemonSet", "Service", "ServiceAccount"], kinds
    cases.run("default: ServiceAccount, ConfigMaps, Service, DaemonSet only", expected_kinds)

    ds = r.one("DaemonSet")
    spec = pod_spec(ds)
    c = container(spec, "faultline")

    cases.run("agent: uid 0, all capabilities dropped, no privilege escalation, read-only root, seccomp",
              check_faultline_container_hardening, c, spec, False)

    def node_name():
        e = env_of(c, "NODE_NAME")
        assert e["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    cases.run("agent: NODE_NAME from the downward API", node_name)

    def host_mounts():
        m = mount_of(c, "pod-logs")
        assert m["mountPath"] == "/var/log/pods" and m["readOnly"] is True
        assert volume(spec, "pod-logs")["hostPath"] == {"path": "/var/log/pods", "type": "Directory"}
        m = mount_of(c, "container-logs")
        assert m["mountPath"] == "/var/log/containers" and m["readOnly"] is True
        st = volume(spec, "state")["hostPath"]
        assert st["path"] == "/var/lib/faultline/fl" and st["type"] == "DirectoryOrCreate", st
        m = mount_of(c, "state")
        assert m["mountPath"] == STATE_MOUNT and not m.get("readOnly")
        for v in spec["volumes"]:
            if "hostPath" in v and v["name"] != "state":
                assert mount_of(c, v["name"]).get("readOnly") is True, "%s must be read-only" % v["name"]
        assert not [v for v in spec["volumes"] if v.get("hostPath", {}).get("path") == "/dev/kmsg"]
    cases.run("agent: /var/log/pods and /var/log/containers read-only, state on a hostPath per release",
              host_mounts)

    def agent_probes():
        lp, rp = probes(c, "metrics")
        assert rp and rp["httpGet"]["path"] == "/readyz" and rp["httpGet"]["port"] == "metrics"
        assert c["ports"] == [{"name": "metrics", "containerPort": 9464, "protocol": "TCP"}]
        assert c.get("resources", {}).get("limits", {}).get("memory"), "memory limit"
        assert c.get("resources", {}).get("requests", {}).get("cpu"), "cpu request"
    cases.run("agent: probes /healthz and /readyz on port metrics, resources set", agent_probes)

    def agent_config():
        cfg = config_of(r, c, spec)
        assert cfg["listen"] == "0.0.0.0:9464", cfg["listen"]
        assert cfg["state_dir"] == STATE_MOUNT
        srcs = cfg["sources"]
        assert [s["type"] for s in srcs] == ["file"], srcs
        assert srcs[0]["paths"] == ["/var/log/pods/*/*/*.log"] and srcs[0]["source"] == "pods"
        check_rule_mounts(r, c, spec, cfg)
        assert "overrides" not in cfg["rules"]
    cases.run("agent: config.yaml listens on 0.0.0.0:9464, state on the hostPath, pods source, rules mounted",
              agent_config)

    def pod_misc():
        assert spec["automountServiceAccountToken"] is False
        assert {"operator": "Exists"} in spec["tolerations"], "tolerates GPU node taints"
        ann = ds["spec"]["template"]["metadata"]["annotations"]
        assert "checksum/config" in ann and not [k for k in ann if "rules" in k], ann
        assert spec["terminationGracePeriodSeconds"] >= 15
    cases.run("agent: no API token, tolerates taints, config checksum (but no rules checksum)", pod_misc)

    def catalog():
        cm = r.configmap("fl-faultline-rules-catalog")
        assert cm is not None, "no catalog ConfigMap"
        want = catalog_files()
        got = cm.get("data") or {}
        assert sorted(got) == sorted(want), "catalog keys %s != rules/ files %s" % (sorted(got), sorted(want))
        for k, p in want.items():
            with open(p, encoding="utf-8") as f:
                assert got[k] == f.read(), "catalog entry %s differs from %s" % (k, p)
    cases.run("catalog ConfigMap holds every rules/**.yaml (not tests/) verbatim", catalog)

    def service():
        svc = r.one("Service")
        assert svc["spec"]["clusterIP"] == "None"
        assert svc["spec"]["ports"][0]["port"] == 9464 and svc["spec"]["ports"][0]["targetPort"] == "metrics"
    cases.run("Service: headless, port 9464 -> metrics", service)

    if os.environ.get("FAULTLINE_BIN") and os.access(os.environ["FAULTLINE_BIN"], os.X_OK):
        def catalog_loads():
            # What a pod sees: the ConfigMap's keys as files in one directory (no tests/ fixtures),
            # loaded the way `run` loads rules (`scan --rules DIR` shares the loader).
            cm = r.configmap("fl-faultline-rules-catalog")
            d = tempfile.mkdtemp(prefix="fl-catalog-")
            try:
                for k, v in (cm.get("data") or {}).items():
                    with open(os.path.join(d, k), "w", encoding="utf-8") as f:
                        f.write(v)
                p = subprocess.run([os.environ["FAULTLINE_BIN"], "scan", "--rules", d], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                assert p.returncode == 0, "the catalog as mounted from its ConfigMap does not load:\n" + p.stdout[-3000:]
            finally:
                shutil.rmtree(d)
        cases.run("catalog ConfigMap, as mounted in a pod, loads (faultline scan --rules)", catalog_loads)


def t_full(cases):
    r = Render("-f", os.path.join(FIXTURES, "values-full.yaml"), "--api-versions", "monitoring.coreos.com/v1")
    cases.run("full values (sidecar example, monitors, rules, kernel log file) render valid objects", r.ok)
    if r.rc != 0:
        return
    dep = r.one("Deployment", "vllm-example")
    spec = pod_spec(dep)
    side = container(spec, "faultline", init=True)
    vllm = container(spec, "vllm")

    def sidecar_native():
        assert side["restartPolicy"] == "Always", "native sidecar: initContainer with restartPolicy Always"
        assert spec["initContainers"][0]["name"] == "faultline"
        assert "readinessProbe" not in side, "sidecar readiness would gate the server's readiness"
        assert "startupProbe" not in side, "a startupProbe would delay the server's start"
        probes(side, "faultline")
        assert side["ports"][0]["name"] == "faultline"
        assert env_of(side, "FAULTLINE_CONTAINER")["value"] == "vllm"
        assert env_of(side, "POD_NAME")["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
        assert env_of(side, "NODE_NAME")["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    cases.run("sidecar: native (restartPolicy Always), liveness only, pod identity env", sidecar_native)

    cases.run("sidecar: non-root, all capabilities dropped, read-only root, seccomp RuntimeDefault",
              check_faultline_container_hardening, side, spec, True)

    def shared_log():
        ms = mount_of(side, "vllm-logs")
        mv = mount_of(vllm, "vllm-logs")
        assert ms.get("readOnly") is True and not mv.get("readOnly")
        cfg = config_of(r, side, spec)
        src = cfg["sources"]
        assert len(src) == 1 and src[0]["paths"] == [ms["mountPath"] + "/*.log"], src
        assert src[0]["start_at"] == "beginning"
        cmd = vllm["command"]
        assert cmd[:2] == ["python3", "/opt/faultline/logtee.py"], cmd
        logfile = cmd[cmd.index("--file") + 1]
        assert logfile == mv["mountPath"] + "/vllm.log", logfile
        assert cmd[-3:] == ["--", "vllm", "serve"], cmd
        mb = int(cmd[cmd.index("--max-bytes") + 1])
        nb = int(cmd[cmd.index("--backups") + 1])
        lim = volume(spec, "vllm-logs")["emptyDir"]["sizeLimit"]
        assert lim.endswith("Mi") and int(lim[:-2]) * 1048576 >= mb * (nb + 1), (lim, mb, nb)
        assert env_of(vllm, "PYTHONUNBUFFERED")["value"] == "1"
        lt = mount_of(vllm, "logtee")
        cm = r.configmap(volume(spec, "logtee")["configMap"]["name"])
        with open(os.path.join(CHART_DIR, "files", "logtee.py"), encoding="utf-8") as f:
            assert cm["data"]["logtee.py"] == f.read(), "logtee ConfigMap differs from files/logtee.py"
        assert lt["mountPath"] == "/opt/faultline"
        assert vllm["args"][0] == "Qwen/Qwen2.5-0.5B-Instruct" and "--gpu-memory-utilization" in vllm["args"]
        assert vllm["resources"]["limits"]["nvidia.com/gpu"] == 1
        assert env_of(vllm, "HF_TOKEN")["valueFrom"]["secretKeyRef"]["name"] == "hf-token"
    cases.run("sidecar example: vLLM output teed by logtee.py to a rotated file the sidecar reads", shared_log)

    def never_restarts_server():
        ann = dep["spec"]["template"]["metadata"].get("annotations") or {}
        assert not [k for k in ann if k.startswith("checksum/")], "checksums in the pod template restart vLLM"
        cfg = config_of(r, side, spec)
        check_rule_mounts(r, side, spec, cfg)
        assert not [v for v in spec["volumes"] if "hostPath" in v], "the sidecar pod needs no hostPath"
        assert dep["spec"]["strategy"]["type"] == "Recreate"
    cases.run("sidecar example: rules hot-reload from ConfigMap dirs, no checksum, no hostPath", never_restarts_server)

    def configmaps_exist():
        names = {d["metadata"]["name"] for d in r.all("ConfigMap")}
        for v in spec["volumes"] + pod_spec(r.one("DaemonSet"))["volumes"]:
            if "configMap" in v and v["configMap"]["name"] != "gitops-rules":
                assert v["configMap"]["name"] in names, "volume %s: ConfigMap %s not rendered" % (
                    v["name"], v["configMap"]["name"])
    cases.run("every ConfigMap volume refers to a rendered ConfigMap (or a declared extra one)", configmaps_exist)

    def custom_rules():
        ds = r.one("DaemonSet")
        dspec = pod_spec(ds)
        c = container(dspec, "faultline")
        cfg = config_of(r, c, dspec)
        assert "/etc/faultline/rules/custom" in cfg["rules"]["paths"]
        assert "/etc/faultline/rules/extra-gitops-rules" in cfg["rules"]["paths"]
        assert cfg["rules"]["overrides"] == {"team-serving-oom": {"severity": "warning",
                                                                  "labels": {"team": "serving"}}}
        cm = r.configmap("fl-faultline-rules-custom")
        rule = yaml.safe_load(cm["data"]["team-oom.yaml"])
        assert rule["id"] == "team-serving-oom"
        check_rule_mounts(r, c, dspec, cfg)
        assert cfg["log"] == {"level": "debug"} and cfg["sinks"][0]["name"] == "alertmanager"
        assert cfg["listen"] == "0.0.0.0:9464", "user config must not displace the chart's listen"
        kinds = [s.get("source") for s in cfg["sources"]]
        assert kinds == ["pods", "kernel", "vllm-host-logs"], kinds
        kern = cfg["sources"][1]
        assert kern["paths"] == ["/var/log/kern.log"] and kern["format"] == "raw"
        assert volume(dspec, "kernel-log")["hostPath"] == {"path": "/var/log/kern.log", "type": "File"}
        assert mount_of(c, "kernel-log")["readOnly"] is True
        assert mount_of(c, "host-vllm-host-logs")["readOnly"] is True
        assert dspec["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    cases.run("custom rules, extra ConfigMaps, overrides, kernel log file, merged config", custom_rules)

    def monitors():
        sm = r.one("ServiceMonitor")
        ds = r.one("DaemonSet")
        labels = ds["spec"]["template"]["metadata"]["labels"]
        sel = sm["spec"]["selector"]["matchLabels"]
        svc = r.one("Service", "-faultline")
        assert all(svc["metadata"]["labels"].get(k) == v for k, v in sel.items()), "ServiceMonitor selects the Service"
        assert sm["spec"]["endpoints"][0]["port"] in [p["name"] for p in svc["spec"]["ports"]]
        assert any(rl.get("targetLabel") == "node" for rl in sm["spec"]["endpoints"][0]["relabelings"])
        assert sm["metadata"]["labels"]["release"] == "kube-prometheus-stack"
        assert all(labels.get(k) == v for k, v in svc["spec"]["selector"].items())
        pm = r.one("PodMonitor")
        plabels = dep["spec"]["template"]["metadata"]["labels"]
        assert all(plabels.get(k) == v for k, v in pm["spec"]["selector"]["matchLabels"].items())
        assert pm["spec"]["podMetricsEndpoints"][0]["port"] in [p["name"] for p in side["ports"]]
    cases.run("ServiceMonitor selects the agents' Service, PodMonitor the sidecar pods", monitors)

    def prometheus_rule():
        pr = r.one("PrometheusRule")
        with open(os.path.join(CHART_DIR, "files", "alerts.yaml"), encoding="utf-8") as f:
            want = yaml.safe_load(f)
        assert pr["spec"] == want, "PrometheusRule spec differs from files/alerts.yaml"
        promtool = shutil.which("promtool")
        if promtool and pr["spec"].get("groups"):
            promtool_check_rules(promtool, yaml.safe_dump(pr["spec"]))
    cases.run("PrometheusRule carries files/alerts.yaml verbatim (promtool check rules)", prometheus_rule)

    def service_example():
        svc = r.one("Service", "vllm-example")
        names = {p["name"]: p["targetPort"] for p in svc["spec"]["ports"]}
        assert names == {"http": "http", "faultline": "faultline"}, names
    cases.run("sidecar example Service exposes http and faultline metrics", service_example)


def t_alerts_copy(cases):
    src = os.path.join(SOURCE_DIR, "deploy", "prometheus", "alerts.yaml")
    dst = os.path.join(CHART_DIR, "files", "alerts.yaml")

    def same():
        if not os.path.exists(src):
            print("     note: %s does not exist yet; the chart keeps its placeholder" % src)
            return
        with open(src, "rb") as a, open(dst, "rb") as b:
            assert a.read() == b.read(), (
                "the chart's files/alerts.yaml differs from deploy/prometheus/alerts.yaml: "
                "run deploy/helm/sync-chart-files.sh")
    cases.run("chart files/alerts.yaml is the copy of deploy/prometheus/alerts.yaml", same)

    def rules_link():
        p = os.path.join(CHART_DIR, "files", "rules")
        assert os.path.islink(p) and os.path.realpath(p) == os.path.realpath(os.path.join(SOURCE_DIR, "rules"))
    cases.run("chart files/rules links to the rule catalog", rules_link)


def t_kmsg(cases):
    r = Render("--set", "agent.kernelLog.mode=kmsg")
    cases.run("kernelLog.mode=kmsg renders valid objects", r.ok)
    if r.rc != 0:
        return

    def kmsg():
        spec = pod_spec(r.one("DaemonSet"))
        c = container(spec, "faultline")
        assert c["securityContext"]["privileged"] is True
        assert "allowPrivilegeEscalation" not in c["securityContext"]
        assert volume(spec, "kmsg")["hostPath"] == {"path": "/dev/kmsg", "type": "CharDevice"}
        cfg = config_of(r, c, spec)
        assert [s["type"] for s in cfg["sources"]] == ["file", "kmsg"], cfg["sources"]
        assert cfg["sources"][1]["paths"] == ["/dev/kmsg"]
    cases.run("kmsg: privileged (device cgroup), /dev/kmsg CharDevice, kmsg source", kmsg)


def t_sidecar_only(cases):
    r = Render("--set", "agent.enabled=false,sidecar.enabled=true,rules.catalog.source=image")
    cases.run("sidecar-only release with the image's catalog renders valid objects", r.ok)
    if r.rc != 0:
        return

    def only_configmaps():
        assert sorted({d["kind"] for d in r.docs}) == ["ConfigMap"], [d["kind"] for d in r.docs]
        names = sorted(d["metadata"]["name"] for d in r.docs)
        assert names == ["fl-faultline-logtee", "fl-faultline-sidecar-config"], names
        cfg = yaml.safe_load(r.configmap("fl-faultline-sidecar-config")["data"]["config.yaml"])
        assert cfg["rules"]["paths"] == ["/usr/share/faultline/rules"], cfg["rules"]
    cases.run("sidecar-only: just the sidecar's ConfigMaps; rules from the image", only_configmaps)


def t_server(cases):
    """What must be reachable is bound deliberately; the API token comes from a Secret; the NetworkPolicy."""
    d = Render().ok()

    def defaults():
        spec = pod_spec(d.one("DaemonSet"))
        c = container(spec, "faultline")
        cfg = config_of(d, c, spec)
        assert cfg["listen"] == "0.0.0.0:9464", cfg["listen"]  # kubelet and Prometheus reach the pod IP
        assert "api_token_file" not in (cfg.get("server") or {}), cfg.get("server")
        assert not any(v["name"] == "faultline-api-token" for v in spec["volumes"])
        assert not d.all("NetworkPolicy")
    cases.run("defaults: bind 0.0.0.0 on the port, API open, no NetworkPolicy", defaults)

    peer = "networkPolicy.from[0].namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name=monitoring"
    r = Render("--set", "server.apiToken.existingSecret=fl-token,server.apiToken.key=api,networkPolicy.enabled=true,"
               "server.bindAddress=::,vllmExample.enabled=true", "--set", peer)
    cases.run("API token Secret, NetworkPolicy and an IPv6 bind render valid objects", r.ok)
    if r.rc != 0:
        return

    def token():
        for spec, c in ((pod_spec(r.one("DaemonSet")), None), (pod_spec(r.one("Deployment")), "init")):
            fl = container(spec, "faultline", init=c == "init")
            v = volume(spec, "faultline-api-token")
            assert v["secret"]["secretName"] == "fl-token", v
            m = mount_of(fl, "faultline-api-token")
            assert m["readOnly"] is True and m["mountPath"] == "/etc/faultline/api-token", m
            args = fl["args"]
            path = args[args.index("--config") + 1]
            cm_mount = [x for x in fl["volumeMounts"] if path.startswith(x["mountPath"].rstrip("/") + "/")][0]
            cm = r.configmap(volume(spec, cm_mount["name"])["configMap"]["name"])
            cfg = yaml.safe_load(cm["data"][path.rsplit("/", 1)[1]])
            assert cfg["server"]["api_token_file"] == "/etc/faultline/api-token/api", cfg["server"]
            assert cfg["listen"] == "[::]:9464", cfg["listen"]
            with tempfile.NamedTemporaryFile("w", suffix=".token") as f:  # the Secret exists only in a pod
                f.write("tok\n")
                f.flush()
                cfg["server"]["api_token_file"] = f.name
                daemon_accepts(cfg, r)
    cases.run("the API token Secret is mounted read-only and named by server.api_token_file (agent, sidecar)",
              token)

    def policy():
        np = r.one("NetworkPolicy")
        sel = np["spec"]["podSelector"]["matchLabels"]
        assert sel["app.kubernetes.io/component"] == "agent", sel
        assert np["spec"]["policyTypes"] == ["Ingress"], np["spec"]
        (rule,) = np["spec"]["ingress"]
        assert rule["ports"] == [{"port": "metrics", "protocol": "TCP"}], rule
        assert rule["from"][0]["namespaceSelector"]["matchLabels"] == {
            "kubernetes.io/metadata.name": "monitoring"}, rule
        only_node = Render("--set", "networkPolicy.enabled=true").ok()
        assert only_node.one("NetworkPolicy")["spec"]["ingress"] == [], "from: [] must admit only the node"
    cases.run("NetworkPolicy: ingress to the port only from the listed peers (and the node)", policy)


def t_port_and_names(cases):
    long_name = "inference-observability-production-eu-west"
    r = Render("--set", "port=9500,vllmExample.enabled=true", name=long_name)
    cases.run("long release name and --set port=9500 render valid objects", r.ok)
    if r.rc != 0:
        return

    def port():
        spec = pod_spec(r.one("DaemonSet"))
        c = container(spec, "faultline")
        assert c["ports"][0]["containerPort"] == 9500
        assert config_of(r, c, spec)["listen"] == "0.0.0.0:9500"
        assert r.one("Service", "-faultline")["spec"]["ports"][0]["port"] == 9500
        dspec = pod_spec(r.one("Deployment"))
        side = container(dspec, "faultline", init=True)
        assert side["ports"][0]["containerPort"] == 9500
        assert config_of(r, side, dspec)["listen"] == "0.0.0.0:9500"
        for d in r.docs:
            assert len(d["metadata"]["name"]) <= 63, d["metadata"]["name"]
    cases.run("port flows to containers, config and Service; names stay within 63", port)


def t_parent_chart(cases):
    """The sidecar used from another chart that depends on faultline (README's parent usage)."""
    chart = os.path.join(FIXTURES, "parent-chart")
    r = Render(chart=chart, name="rel")
    cases.run("a parent chart including faultline.sidecar renders valid objects", r.ok)
    if r.rc != 0:
        return

    def parent():
        dep = r.one("Deployment", "-sglang")
        spec = pod_spec(dep)
        side = container(spec, "faultline", init=True)
        assert side["restartPolicy"] == "Always"
        assert side["image"] == "ghcr.io/faultline/faultline:0.1.0", side["image"]
        assert env_of(side, "FAULTLINE_CONTAINER")["value"] == "sglang"
        assert mount_of(side, "server-logs")["readOnly"] is True
        names = {d["metadata"]["name"] for d in r.all("ConfigMap")}
        for v in spec["volumes"]:
            if "configMap" in v:
                assert v["configMap"]["name"] in names, "%s not rendered by the subchart" % v["configMap"]["name"]
        assert not r.all("DaemonSet"), "agent.enabled=false in the parent's values"
        cfg = config_of(r, side, spec)
        check_rule_mounts(r, side, spec, cfg)
        off = Render("--set", "faultline.enabled=false", chart=chart, name="rel").ok()
        assert [d["kind"] for d in off.docs] == ["Deployment"], [d["kind"] for d in off.docs]
        assert "initContainers" not in pod_spec(off.docs[0])
    cases.run("parent chart: sidecar, subchart ConfigMaps, condition faultline.enabled", parent)


def t_failures(cases):
    def fails(args, text, kube="v1.30.0"):
        r = Render(*args, kube=kube)
        assert r.rc != 0, "rendering %s should fail" % (args,)
        assert text in r.err, "error %r does not mention %r" % (r.err.strip(), text)

    cases.run("sidecar on Kubernetes 1.28 is refused (init container would block the pod)",
              fails, ["--set", "vllmExample.enabled=true"], "native sidecar containers need Kubernetes >= 1.29",
              kube="v1.28.5")
    cases.run("sidecar on 1.28 with skipKubeVersionCheck renders",
              lambda: Render("--set", "vllmExample.enabled=true,sidecar.skipKubeVersionCheck=true",
                             kube="v1.28.5").ok())
    cases.run("a bad kernelLog.mode is refused", fails, ["--set", "agent.kernelLog.mode=dmesg"],
              "agent.kernelLog.mode must be none, kmsg or file")
    cases.run("no rules at all is refused", fails, ["--set", "rules.catalog.enabled=false"], "no rules at all")
    cases.run("a custom rule key that is not a file name is refused", fails,
              ["--set-string", "rules.custom.bad/name=x"], "must be a file name")
    cases.run("an agent with nothing to read is refused", fails,
              ["--set", "agent.podLogs.enabled=false"], "the agent has nothing to read")

    def exclude():
        ids = sorted(catalog_files())
        if not ids:
            print("     note: the catalog is empty")
            return
        victim = ids[0].rsplit(".", 1)[0]
        r = Render("--set", "rules.catalog.exclude={%s}" % victim).ok()
        data = r.configmap("fl-faultline-rules-catalog").get("data") or {}
        assert ids[0] not in data and len(data) == len(ids) - 1, sorted(data)
    cases.run("rules.catalog.exclude drops a catalog rule by id", exclude)

    def notes():
        r = Render("--show-notes", "--set", "vllmExample.enabled=true")
        assert r.rc == 0, r.err
        assert "NOTES:" in r.out and "pod-security.kubernetes.io/enforce=privileged" in r.out
    cases.run("NOTES.txt renders", notes)

    def digest():
        r = Render("--set", "image.digest=sha256:" + hashlib.sha256(b"x").hexdigest()).ok()
        img = container(pod_spec(r.one("DaemonSet")), "faultline")["image"]
        assert img.startswith("ghcr.io/faultline/faultline@sha256:"), img
    cases.run("image.digest pins the image", digest)


def t_checker(cases):
    """The offline checker must catch the mistakes it exists for, or its silence means nothing."""
    bad = yaml.safe_load("""
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: bad, labels: {app: x}}
spec:
  selector: {matchLabels: {app: y}}
  template:
    metadata: {labels: {app: x}}
    spec:
      containers:
        - name: c
          image: i
          ports: [{name: faultline-metrics, containerPort: 9464}]
          livenessProbe: {httpGet: {path: /healthz, port: metrics}}
          securityContext: {privileged: true, allowPrivilegeEscalation: false, readOnlyRootFileSystem: true}
          restartPolicy: Always
          volumeMounts: [{name: nowhere, mountPath: /x}]
          resources: {limits: {memory: lots}}
""")
    want = ["unknown field 'readOnlyRootFileSystem'", "not an IANA_SVC_NAME", "is not a named port",
            "allowPrivilegeEscalation to false and privileged", "restartPolicy", "names no volume",
            "not a quantity", "does not select the template labels"]

    def catches():
        errs = "\n".join(k8s_check.check_manifests([bad]))
        missed = [w for w in want if w not in errs]
        assert not missed, "the checker missed %s; it said:\n%s" % (missed, errs)
    cases.run("the manifest checker catches known mistakes", catches)


def t_renderer(cases):
    """helmrender reproduces Helm 3's known behaviours on a fixture chart."""
    chart = os.path.join(FIXTURES, "renderer-chart")

    def run(*args):
        return subprocess.run([HELMRENDER, "--name", "rel"] + list(args) + [chart], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)

    def semantics():
        p = run("-f", os.path.join(FIXTURES, "renderer-values.yaml"), "--set", "fromSet=1048576,list[1]=z,r=given",
                "--set-string", "s=true", "--api-versions", "monitoring.coreos.com/v1")
        assert p.returncode == 0, p.stderr
        d = yaml.safe_load(p.stdout)["data"]
        want = {
            "big": "1.048576e+06",          # values files go through JSON: numbers are float64
            "port": "9464",
            "fromSet": "1048576", "fromSetKind": "int64",   # --set types integers as int64
            "s": "true",                   # --set-string keeps strings
            "drop": "",                    # null in a values file deletes the chart default
            "m": '{"a":1,"b":{"c":2,"d":3}}',               # maps merge
            "list": '[null,"z"]',          # --set on an index replaces the whole list
            "tpl": "rel-renderer-check",
            "files": "a.txt: |\n  one\n  two\nb.txt: |\n  b",
            "lines": "3",
            "secret": "c.bin: c2VjcmV0",
            "kube": "v1.30.0/1/30", "hasMon": "true",
            "template": "renderer-check/templates/cm.yaml",
            "missing": "",                 # <no value> is blanked
            "toYaml": "a:\n- 1\n- two\nz: 1",
            "fromYaml": "[1,2]",
            "required": "given",
        }
        diff = {k: (d.get(k), v) for k, v in want.items() if d.get(k) != v}
        assert not diff, "helmrender differs from helm (got, want): %s" % diff

    def required_and_strict():
        p = run()
        assert p.returncode != 0 and "r is required" in p.stderr, p.stderr
        p = run("--strict", "--set", "r=x")
        assert p.returncode != 0 and 'map has no entry for key "fromSet"' in p.stderr, p.stderr
    cases.run("helmrender: values typing, merging, --set, tpl, .Files, capabilities as in Helm 3", semantics)
    cases.run("helmrender: required fails; --strict fails on a missing value", required_and_strict)


def main():
    cases = Cases()
    t_renderer(cases)
    t_checker(cases)
    print("helmrender: %s" % HELMRENDER)
    t_default(cases)
    t_full(cases)
    t_alerts_copy(cases)
    t_kmsg(cases)
    t_sidecar_only(cases)
    t_port_and_names(cases)
    t_server(cases)
    t_parent_chart(cases)
    t_failures(cases)
    cases.finish()


if __name__ == "__main__":
    main()
