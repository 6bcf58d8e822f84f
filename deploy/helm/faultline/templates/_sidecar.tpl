{{/*
faultline as a native sidecar of an inference server: an init container with
restartPolicy: Always, started before the server and stopped after it, restarted on its own
(its failures never restart the server). It reads the log file(s) that the server writes to a
shared volume (see files/logtee.py) and serves /metrics on the port named "faultline".

Use, in a pod spec:

  initContainers:
    {{- include "faultline.sidecar" (dict "root" $ "logVolume" "vllm-logs" "container" "vllm") | nindent 4 }}
  containers:
    - name: vllm
      ...                      # writes /var/log/vllm/*.log on the volume vllm-logs
  volumes:
    - name: vllm-logs
      emptyDir: {sizeLimit: 256Mi}
    {{- include "faultline.sidecarVolumes" (dict "root" $) | nindent 4 }}

Parameters (a dict):
  root       required  the top-level context ($): .Release and .Capabilities come from it
  logVolume  required  name of the pod volume holding the server's log files (*.log at its root)
  container  optional  the server's container name, for the `container` label (default "app")
  values     optional  faultline's values; default root.Values. From a parent chart that has
                       faultline as a dependency: $.Values.faultline
The pod also needs the ConfigMaps of a faultline release with sidecar.enabled=true in the same
namespace (config and rules; the rule ConfigMaps hot-reload into every sidecar).
*/}}
{{- define "faultline.sidecar" -}}
{{- $root := required "faultline.sidecar: pass (dict \"root\" $ \"logVolume\" NAME)" (get . "root") }}
{{- $values := default $root.Values (get . "values") }}
{{- $logVolume := required "faultline.sidecar: logVolume (the pod volume with the server's log files) is required" (get . "logVolume") }}
{{- $container := default "app" (get . "container") }}
{{- $ctx := dict "Values" $values "Release" $root.Release "Chart" $root.Chart }}
{{- $sc := $values.sidecar }}
{{- if and (not $sc.skipKubeVersionCheck) (not (semverCompare ">=1.29.0-0" $root.Capabilities.KubeVersion.Version)) }}
{{- fail (printf "faultline.sidecar: native sidecar containers need Kubernetes >= 1.29 (rendering for %s); on 1.28 with the SidecarContainers feature gate set sidecar.skipKubeVersionCheck=true" $root.Capabilities.KubeVersion.Version) }}
{{- end -}}
- name: faultline
  image: {{ include "faultline.image" $ctx }}
  imagePullPolicy: {{ $values.image.pullPolicy }}
  restartPolicy: Always
  args:
    - run
    - --config
    - {{ include "faultline.paths.config" $ctx }}/config.yaml
    {{- with $sc.extraArgs }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  env:
    {{- include "faultline.identityEnv" $ctx | nindent 4 }}
    - name: FAULTLINE_CONTAINER
      value: {{ $container | quote }}
    {{- with $sc.extraEnv }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  ports:
    - name: faultline
      containerPort: {{ int $values.port }}
      protocol: TCP
  {{- with $sc.livenessProbe }}
  livenessProbe:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- if $sc.readinessProbe.enabled }}
  readinessProbe:
    {{- toYaml (omit $sc.readinessProbe "enabled") | nindent 4 }}
  {{- end }}
  resources:
    {{- toYaml $sc.resources | nindent 4 }}
  securityContext:
    runAsNonRoot: true
    runAsUser: {{ int $sc.runAsUser }}
    runAsGroup: {{ int $sc.runAsGroup }}
    allowPrivilegeEscalation: false
    readOnlyRootFilesystem: true
    capabilities:
      drop: ["ALL"]
    seccompProfile:
      type: RuntimeDefault
  volumeMounts:
    {{- include "faultline.commonVolumeMounts" $ctx | nindent 4 }}
    - name: {{ $logVolume }}
      mountPath: {{ include "faultline.paths.sidecarLogs" $ctx }}
      readOnly: true
    - name: faultline-state
      mountPath: {{ include "faultline.paths.state" $ctx }}
{{- end }}

{{/* The sidecar's volumes (config, rules, state, tmp). Parameters: root, values (as above). */}}
{{- define "faultline.sidecarVolumes" -}}
{{- $root := required "faultline.sidecarVolumes: pass (dict \"root\" $)" (get . "root") }}
{{- $values := default $root.Values (get . "values") }}
{{- $ctx := dict "Values" $values "Release" $root.Release }}
{{- include "faultline.commonVolumes" (dict "Values" $values "Release" $root.Release "configName" (include "faultline.childName" (dict "ctx" $ctx "suffix" "sidecar-config"))) }}
- name: faultline-state
  emptyDir:
    sizeLimit: {{ $values.sidecar.stateSizeLimit }}
{{- end }}

{{/* The sidecar's config.yaml: the server's log files on the shared volume, read from their start. */}}
{{- define "faultline.sidecarConfigYaml" -}}
{{- $sources := list (dict
      "type" "file"
      "paths" (list (printf "%s/*.log" (include "faultline.paths.sidecarLogs" .)))
      "format" "raw"
      "start_at" "beginning"
      "source" "sidecar") }}
{{- include "faultline.configYaml" (dict "Values" .Values "sources" $sources) }}
{{- end }}
