"""Offline checks of Kubernetes manifests, for machines without a cluster or kubeconform.

Structure: every object of a built-in kind is walked against the OpenAPI models of Debian's
python3-kubernetes (field names, nesting, scalar types, required fields). Its models are
Kubernetes 1.22's, so the few newer fields the chart uses are listed in NEWER_FIELDS.
Semantics: the API server's validation rules that have bitten charts (names, label values,
port names, probe and targetPort references, volume references, selector vs template labels,
privileged vs allowPrivilegeEscalation, restartPolicy on containers, ConfigMap keys and size).
Prometheus Operator objects (ServiceMonitor, PodMonitor, PrometheusRule) are checked by hand.

check_manifests(docs) -> list of error strings ("<kind>/<name>: <path>: <problem>").
"""

import re

try:
    import kubernetes.client as kc
except ImportError:  # reported by the caller
    kc = None

# Fields newer than the python3-kubernetes models (model class -> {json name: type string}).
NEWER_FIELDS = {
    "V1Container": {"restartPolicy": "str", "resizePolicy": "list[object]"},
    "V1PodSpec": {"hostUsers": "bool", "os": "object", "schedulingGates": "list[object]",
                  "resourceClaims": "list[object]"},
    "V1SecurityContext": {"appArmorProfile": "object"},
    "V1PodSecurityContext": {"appArmorProfile": "object"},
    "V1Probe": {"grpc": "object"},
}

KIND_MODELS = {
    ("v1", "ConfigMap"): "V1ConfigMap",
    ("v1", "Secret"): "V1Secret",
    ("v1", "Service"): "V1Service",
    ("v1", "ServiceAccount"): "V1ServiceAccount",
    ("v1", "Pod"): "V1Pod",
    ("apps/v1", "DaemonSet"): "V1DaemonSet",
    ("apps/v1", "Deployment"): "V1Deployment",
    ("apps/v1", "StatefulSet"): "V1StatefulSet",
    ("policy/v1", "PodDisruptionBudget"): "V1PodDisruptionBudget",
    ("rbac.authorization.k8s.io/v1", "Role"): "V1Role",
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): "V1RoleBinding",
    ("networking.k8s.io/v1", "NetworkPolicy"): "V1NetworkPolicy",
}

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
PORT_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
CONFIGMAP_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
QUANTITY = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)(([KMGTPE]i)|[numkMGTPE]|[eE][+-]?\d+)?$")
HOSTPATH_TYPES = {"", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice", "BlockDevice"}


def _json_to_attr(model):
    return {v: k for k, v in model.attribute_map.items()}


def _check_type(value, type_str, path, errors):
    if value is None:
        return
    if type_str.startswith("list["):
        if not isinstance(value, list):
            errors.append("%s: expected a list, got %s" % (path, type(value).__name__))
            return
        inner = type_str[5:-1]
        for i, x in enumerate(value):
            _check_type(x, inner, "%s[%d]" % (path, i), errors)
    elif type_str.startswith("dict("):
        if not isinstance(value, dict):
            errors.append("%s: expected a map, got %s" % (path, type(value).__name__))
            return
        inner = type_str[5:-1].split(", ", 1)[1]
        for k, x in value.items():
            if not isinstance(k, str):
                errors.append("%s: map key %r is not a string" % (path, k))
            _check_type(x, inner, "%s.%s" % (path, k), errors)
    elif type_str == "str":
        if not isinstance(value, str):
            errors.append("%s: expected a string, got %s %r" % (path, type(value).__name__, value))
    elif type_str == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            errors.append("%s: expected an integer, got %s %r" % (path, type(value).__name__, value))
    elif type_str == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            errors.append("%s: expected a number, got %r" % (path, value))
    elif type_str == "bool":
        if not isinstance(value, bool):
            errors.append("%s: expected true or false, got %s %r" % (path, type(value).__name__, value))
    elif type_str in ("object", "datetime", "date"):
        return
    else:
        _check_model(value, type_str, path, errors)


# Fields typed as strings in the models that are Kubernetes quantities (int or string).
QUANTITY_FIELDS = {("V1ResourceRequirements", "limits"), ("V1ResourceRequirements", "requests"),
                   ("V1EmptyDirVolumeSource", "sizeLimit")}


def _check_model(obj, model_name, path, errors):
    model = getattr(kc, model_name, None)
    if model is None:
        errors.append("%s: no model %s" % (path, model_name))
        return
    if not isinstance(obj, dict):
        errors.append("%s: expected an object (%s), got %s" % (path, model_name, type(obj).__name__))
        return
    j2a = _json_to_attr(model)
    newer = NEWER_FIELDS.get(model_name, {})
    kwargs = {}
    for key, value in obj.items():
        if (model_name, key) in QUANTITY_FIELDS:
            for k, q in (value.items() if isinstance(value, dict) else [("", value)]):
                _check_quantity(q, "%s.%s%s" % (path, key, "." + k if k else ""), errors)
            kwargs[j2a[key]] = value
        elif key in j2a:
            attr = j2a[key]
            _check_type(value, model.openapi_types[attr], "%s.%s" % (path, key), errors)
            kwargs[attr] = value
        elif key in newer:
            _check_type(value, newer[key], "%s.%s" % (path, key), errors)
        else:
            errors.append("%s: unknown field %r in %s" % (path, key, model_name))
    # Required fields and enums: the model's own setters validate them.
    try:
        model(**kwargs)
    except (ValueError, TypeError) as e:
        errors.append("%s: %s" % (path, e))


def _pod_spec_of(doc):
    kind = doc.get("kind")
    spec = doc.get("spec") or {}
    if kind == "Pod":
        return spec, (doc.get("metadata") or {})
    if kind in ("Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job"):
        tmpl = spec.get("template") or {}
        return tmpl.get("spec") or {}, (tmpl.get("metadata") or {})
    return None, None


def _check_labels(labels, path, errors):
    for k, v in (labels or {}).items():
        name = k.split("/", 1)[-1]
        prefix = k.split("/", 1)[0] if "/" in k else None
        if not LABEL_NAME.match(name) or len(name) > 63:
            errors.append("%s: label name %r is invalid" % (path, k))
        if prefix is not None and (not DNS1123_SUBDOMAIN.match(prefix) or len(prefix) > 253):
            errors.append("%s: label prefix %r is invalid" % (path, prefix))
        if not isinstance(v, str):
            errors.append("%s: label %s value %r is not a string" % (path, k, v))
        elif len(v) > 63 or not LABEL_VALUE.match(v):
            errors.append("%s: label %s value %r is invalid" % (path, k, v))


def _check_quantity(q, path, errors):
    if isinstance(q, bool) or not isinstance(q, (str, int, float)) or not QUANTITY.match(str(q)):
        errors.append("%s: %r is not a quantity" % (path, q))


def _check_container(c, volumes, where, is_init, errors):
    name = c.get("name", "?")
    p = "%s.%s" % (where, name)
    if not DNS1123_LABEL.match(name) or len(name) > 63:
        errors.append("%s: container name is not a DNS-1123 label" % p)
    port_names = set()
    for port in c.get("ports") or []:
        pn = port.get("name")
        if pn is not None:
            if len(pn) > 15 or not PORT_NAME.match(pn) or not re.search("[a-z]", pn) or "--" in pn:
                errors.append("%s: port name %r is not an IANA_SVC_NAME (<= 15 chars, a-z0-9-)" % (p, pn))
            if pn in port_names:
                errors.append("%s: duplicate port name %r" % (p, pn))
            port_names.add(pn)
        cp = port.get("containerPort")
        if not isinstance(cp, int) or not 0 < cp < 65536:
            errors.append("%s: containerPort %r out of range" % (p, cp))
    for probe_name in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = c.get(probe_name)
        if not probe:
            continue
        handlers = [h for h in ("httpGet", "tcpSocket", "exec", "grpc") if h in probe]
        if len(handlers) != 1:
            errors.append("%s.%s: exactly one handler needed, got %s" % (p, probe_name, handlers))
        for h in ("httpGet", "tcpSocket"):
            port = (probe.get(h) or {}).get("port")
            if isinstance(port, str) and port not in port_names:
                errors.append("%s.%s: port %r is not a named port of the container" % (p, probe_name, port))
        if probe_name in ("livenessProbe", "startupProbe") and probe.get("successThreshold", 1) != 1:
            errors.append("%s.%s: successThreshold must be 1" % (p, probe_name))
    env_names = set()
    for e in c.get("env") or []:
        n = e.get("name", "")
        if not ENV_NAME.match(n):
            errors.append("%s: env name %r is invalid" % (p, n))
        if n in env_names:
            errors.append("%s: duplicate env %r" % (p, n))
        env_names.add(n)
        if "value" in e and "valueFrom" in e:
            errors.append("%s: env %s has both value and valueFrom" % (p, n))
    mount_paths = set()
    for m in c.get("volumeMounts") or []:
        if m.get("name") not in volumes:
            errors.append("%s: volumeMount %r names no volume of the pod" % (p, m.get("name")))
        mp = m.get("mountPath")
        if mp in mount_paths:
            errors.append("%s: mountPath %s used twice" % (p, mp))
        mount_paths.add(mp)
        if not isinstance(mp, str) or not mp.startswith("/"):
            errors.append("%s: mountPath %r is not absolute" % (p, mp))
    sc = c.get("securityContext") or {}
    if sc.get("privileged") is True and sc.get("allowPrivilegeEscalation") is False:
        errors.append("%s: cannot set allowPrivilegeEscalation to false and privileged to true" % p)
    rp = c.get("restartPolicy")
    if rp is not None and (not is_init or rp != "Always"):
        errors.append("%s: restartPolicy %r is allowed only as Always on an init container" % (p, rp))
    if is_init and rp == "Always":
        pass
    elif is_init:
        for probe_name in ("livenessProbe", "readinessProbe", "startupProbe"):
            if probe_name in c:
                errors.append("%s: an init container (not a sidecar) may not have %s" % (p, probe_name))
    res = c.get("resources") or {}
    for section in ("requests", "limits"):
        for k, q in (res.get(section) or {}).items():
            _check_quantity(q, "%s.resources.%s.%s" % (p, section, k), errors)
    return port_names


def _check_pod(doc, spec, meta, errors):
    where = "%s/%s" % (doc.get("kind"), (doc.get("metadata") or {}).get("name"))
    volumes = {}
    for v in spec.get("volumes") or []:
        n = v.get("name", "")
        if n in volumes:
            errors.append("%s: duplicate volume %r" % (where, n))
        if not DNS1123_LABEL.match(n) or len(n) > 63:
            errors.append("%s: volume name %r is not a DNS-1123 label" % (where, n))
        sources = [k for k in v if k != "name"]
        if len(sources) != 1:
            errors.append("%s: volume %s has %d sources" % (where, n, len(sources)))
        hp = v.get("hostPath")
        if hp is not None and hp.get("type", "") not in HOSTPATH_TYPES:
            errors.append("%s: volume %s: hostPath type %r" % (where, n, hp.get("type")))
        ed = v.get("emptyDir")
        if ed and "sizeLimit" in ed:
            _check_quantity(ed["sizeLimit"], "%s: volume %s sizeLimit" % (where, n), errors)
        volumes[n] = v
    names = set()
    ports = set()
    for is_init, key in ((True, "initContainers"), (False, "containers")):
        for c in spec.get(key) or []:
            if c.get("name") in names:
                errors.append("%s: duplicate container name %r" % (where, c.get("name")))
            names.add(c.get("name"))
            ports |= _check_container(c, volumes, "%s.%s" % (where, key), is_init, errors)
    if not spec.get("containers"):
        errors.append("%s: no containers" % where)
    _check_labels(meta.get("labels"), where + ".template.labels", errors)
    return ports


def _check_prometheus_rule(doc, errors, where):
    groups = (doc.get("spec") or {}).get("groups")
    if not isinstance(groups, list):
        errors.append("%s: spec.groups must be a list" % where)
        return
    for g in groups:
        if not isinstance(g, dict) or not g.get("name"):
            errors.append("%s: a group without a name" % where)
            continue
        for r in g.get("rules") or []:
            if ("alert" in r) == ("record" in r):
                errors.append("%s: group %s: a rule needs exactly one of alert/record" % (where, g["name"]))
            if not isinstance(r.get("expr"), (str, int)):
                errors.append("%s: group %s: rule %s has no expr" % (where, g["name"], r.get("alert") or r.get("record")))


def _check_monitor(doc, errors, where, endpoints_key):
    spec = doc.get("spec") or {}
    sel = spec.get("selector")
    if not isinstance(sel, dict) or not (sel.get("matchLabels") or sel.get("matchExpressions")):
        errors.append("%s: spec.selector selects nothing" % where)
    eps = spec.get(endpoints_key)
    if not isinstance(eps, list) or not eps:
        errors.append("%s: spec.%s is empty" % (where, endpoints_key))
        return
    allowed = {"port", "targetPort", "path", "scheme", "interval", "scrapeTimeout", "relabelings",
               "metricRelabelings", "honorLabels", "honorTimestamps", "params", "tlsConfig", "bearerTokenSecret",
               "basicAuth", "authorization", "oauth2", "followRedirects", "enableHttp2", "filterRunning",
               "proxyUrl", "bearerTokenFile", "trackTimestampsStaleness"}
    for ep in eps:
        for k in ep:
            if k not in allowed:
                errors.append("%s: unknown endpoint field %r" % (where, k))
        for rl in (ep.get("relabelings") or []) + (ep.get("metricRelabelings") or []):
            for k in rl:
                if k not in {"sourceLabels", "separator", "targetLabel", "regex", "modulus", "replacement", "action"}:
                    errors.append("%s: unknown relabeling field %r" % (where, k))
    ns = spec.get("namespaceSelector")
    if ns is not None and not (set(ns) <= {"any", "matchNames"}):
        errors.append("%s: namespaceSelector has unknown fields %s" % (where, sorted(set(ns) - {"any", "matchNames"})))


def check_manifests(docs):
    errors = []
    if kc is None:
        return ["python3-kubernetes is not installed (apt-get install python3-kubernetes)"]
    seen = set()
    pod_ports = []  # (namespace, labels, named ports)
    services = []
    for doc in docs:
        kind, api = doc.get("kind"), doc.get("apiVersion")
        meta = doc.get("metadata") or {}
        name = meta.get("name")
        where = "%s/%s" % (kind, name)
        if not name:
            errors.append("%s: metadata.name is missing" % kind)
            continue
        key = (api.split("/")[0] if "/" in api else "", kind, meta.get("namespace"), name)
        if key in seen:
            errors.append("%s: defined twice" % where)
        seen.add(key)
        if not DNS1123_SUBDOMAIN.match(name) or len(name) > 253:
            errors.append("%s: name is not a DNS-1123 subdomain" % where)
        if kind == "Service" and (not DNS1035_LABEL.match(name) or len(name) > 63):
            errors.append("%s: a Service name must be a DNS-1035 label (<= 63)" % where)
        if kind in ("DaemonSet", "Deployment", "StatefulSet") and len(name) > 63:
            errors.append("%s: name longer than 63 characters" % where)
        _check_labels(meta.get("labels"), where + ".metadata.labels", errors)
        model = KIND_MODELS.get((api, kind))
        if model:
            _check_model(doc, model, where, errors)
        elif (api, kind) == ("monitoring.coreos.com/v1", "ServiceMonitor"):
            _check_monitor(doc, errors, where, "endpoints")
        elif (api, kind) == ("monitoring.coreos.com/v1", "PodMonitor"):
            _check_monitor(doc, errors, where, "podMetricsEndpoints")
        elif (api, kind) == ("monitoring.coreos.com/v1", "PrometheusRule"):
            _check_prometheus_rule(doc, errors, where)
        else:
            errors.append("%s: unknown apiVersion/kind %s %s" % (where, api, kind))
        if kind == "ConfigMap":
            data = doc.get("data") or {}
            total = 0
            for k, v in data.items():
                if not CONFIGMAP_KEY.match(k) or len(k) > 253:
                    errors.append("%s: key %r is invalid" % (where, k))
                if not isinstance(v, str):
                    errors.append("%s: data.%s is not a string" % (where, k))
                else:
                    total += len(k) + len(v.encode())
            if total > 1024 * 1024 - 4096:
                errors.append("%s: %d bytes of data, over a ConfigMap's 1 MiB" % (where, total))
        spec, tmeta = _pod_spec_of(doc)
        if spec is not None:
            ports = _check_pod(doc, spec, tmeta, errors)
            pod_ports.append((meta.get("namespace"), tmeta.get("labels") or {}, ports))
            if kind != "Pod":
                sel = ((doc.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
                labels = tmeta.get("labels") or {}
                if not sel or any(labels.get(k) != v for k, v in sel.items()):
                    errors.append("%s: spec.selector.matchLabels %s does not select the template labels" % (where, sel))
        if kind == "Service":
            services.append(doc)
    for svc in services:
        spec = svc.get("spec") or {}
        sel = spec.get("selector") or {}
        ns = (svc.get("metadata") or {}).get("namespace")
        where = "Service/%s" % svc["metadata"]["name"]
        matched = [p for p in pod_ports if p[0] == ns and sel and all(p[1].get(k) == v for k, v in sel.items())]
        if sel and not matched:
            errors.append("%s: selector %s matches no pod template in the output" % (where, sel))
        for port in spec.get("ports") or []:
            tp = port.get("targetPort")
            if isinstance(tp, str) and matched and not any(tp in m[2] for m in matched):
                errors.append("%s: targetPort %r is not a named port of the selected pods" % (where, tp))
            if len(spec.get("ports") or []) > 1 and not port.get("name"):
                errors.append("%s: ports need names when there are several" % where)
    return errors
