{{/*
Names. The helpers that the sidecar template shares take a context with .Values and .Release
only, so that a parent chart can call them with its own release and the faultline values
(e.g. (dict "Values" $.Values.faultline "Release" $.Release)). The base name is the literal
"faultline", not .Chart.Name, for the same reason.
*/}}
{{- define "faultline.name" -}}
{{- default "faultline" .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "faultline.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default "faultline" .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Kubernetes object names derived from the full name, kept within 63 characters. */}}
{{- define "faultline.childName" -}}
{{- $full := include "faultline.fullname" .ctx }}
{{- printf "%s-%s" ($full | trunc (int (sub 62 (len .suffix)))) .suffix | trimSuffix "-" }}
{{- end }}

{{- define "faultline.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "faultline.labels" -}}
helm.sh/chart: {{ include "faultline.chart" . }}
{{ include "faultline.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: faultline
{{- end }}

{{- define "faultline.selectorLabels" -}}
app.kubernetes.io/name: {{ include "faultline.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "faultline.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "faultline.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The image reference. Context: dict "Values" "Chart". The tag defaults to the chart's
appVersion only inside this chart (a parent chart's appVersion means something else).
*/}}
{{- define "faultline.image" -}}
{{- $img := .Values.image }}
{{- if $img.digest }}
{{- printf "%s@%s" $img.repository $img.digest }}
{{- else }}
{{- $tag := $img.tag }}
{{- if and (not $tag) (eq .Chart.Name "faultline") }}{{ $tag = .Chart.AppVersion }}{{ end }}
{{- printf "%s:%s" $img.repository (required "faultline: set image.tag (or image.digest)" $tag) }}
{{- end }}
{{- end }}

{{/* Where the chart mounts things inside faultline's containers. */}}
{{- define "faultline.paths.config" -}}/etc/faultline/config{{- end }}
{{- define "faultline.paths.rules" -}}/etc/faultline/rules{{- end }}
{{- define "faultline.paths.state" -}}/var/lib/faultline{{- end }}
{{- define "faultline.paths.sidecarLogs" -}}/var/log/faultline-input{{- end }}
{{- define "faultline.paths.imageCatalog" -}}/usr/share/faultline/rules{{- end }}
{{- define "faultline.paths.apiToken" -}}/etc/faultline/api-token{{- end }}

{{/* The Secret holding the API token (server.apiToken.existingSecret), or "". Context: dict "Values". */}}
{{- define "faultline.apiTokenSecret" -}}
{{- $server := default dict .Values.server }}
{{- with $server.apiToken }}{{ .existingSecret | default "" }}{{ end }}
{{- end }}

{{/*
Rule directories: the catalog, the user's rules, each extra ConfigMap. Context: dict "Values".
Each ConfigMap is its own volume mounted as a directory (never subPath), so kubelet's atomic
..data swap reaches the container and the daemon's watch reloads; the loader skips the
hidden ..<timestamp> copies.
*/}}
{{- define "faultline.rulePaths" -}}
{{- $r := .Values.rules }}
{{- $paths := list }}
{{- if $r.catalog.enabled }}
{{- if eq $r.catalog.source "image" }}
{{- $paths = append $paths (include "faultline.paths.imageCatalog" .) }}
{{- else if eq $r.catalog.source "configmap" }}
{{- $paths = append $paths (printf "%s/catalog" (include "faultline.paths.rules" .)) }}
{{- else }}
{{- fail (printf "faultline: rules.catalog.source must be configmap or image, not %q" $r.catalog.source) }}
{{- end }}
{{- end }}
{{- if $r.custom }}
{{- $paths = append $paths (printf "%s/custom" (include "faultline.paths.rules" .)) }}
{{- end }}
{{- range $r.extraConfigMaps }}
{{- $paths = append $paths (printf "%s/extra-%s" (include "faultline.paths.rules" $) .) }}
{{- end }}
{{- if not $paths }}
{{- fail "faultline: no rules at all (rules.catalog.enabled is false and rules.custom and rules.extraConfigMaps are empty)" }}
{{- end }}
{{- toYaml $paths }}
{{- end }}

{{/* Volumes for config and rules. Context: dict "Values" "Release" "configName". */}}
{{- define "faultline.commonVolumes" -}}
{{- $ctx := dict "Values" .Values "Release" .Release -}}
- name: faultline-config
  configMap:
    name: {{ .configName }}
{{- if and .Values.rules.catalog.enabled (eq .Values.rules.catalog.source "configmap") }}
- name: faultline-rules-catalog
  configMap:
    name: {{ include "faultline.childName" (dict "ctx" $ctx "suffix" "rules-catalog") }}
{{- end }}
{{- if .Values.rules.custom }}
- name: faultline-rules-custom
  configMap:
    name: {{ include "faultline.childName" (dict "ctx" $ctx "suffix" "rules-custom") }}
{{- end }}
{{- range $i, $cm := .Values.rules.extraConfigMaps }}
- name: {{ printf "faultline-rules-x%d" $i }}
  configMap:
    name: {{ $cm }}
{{- end }}
- name: faultline-tmp
  emptyDir:
    sizeLimit: 64Mi
{{- with include "faultline.apiTokenSecret" . }}
- name: faultline-api-token
  secret:
    secretName: {{ . }}
    defaultMode: 0440
{{- end }}
{{- end }}

{{- define "faultline.commonVolumeMounts" -}}
- name: faultline-config
  mountPath: {{ include "faultline.paths.config" . }}
  readOnly: true
{{- if and .Values.rules.catalog.enabled (eq .Values.rules.catalog.source "configmap") }}
- name: faultline-rules-catalog
  mountPath: {{ include "faultline.paths.rules" . }}/catalog
  readOnly: true
{{- end }}
{{- if .Values.rules.custom }}
- name: faultline-rules-custom
  mountPath: {{ include "faultline.paths.rules" . }}/custom
  readOnly: true
{{- end }}
{{- range $i, $cm := .Values.rules.extraConfigMaps }}
- name: {{ printf "faultline-rules-x%d" $i }}
  mountPath: {{ include "faultline.paths.rules" $ }}/extra-{{ $cm }}
  readOnly: true
{{- end }}
- name: faultline-tmp
  mountPath: /tmp
{{- if include "faultline.apiTokenSecret" . }}
- name: faultline-api-token
  mountPath: {{ include "faultline.paths.apiToken" . }}
  readOnly: true
{{- end }}
{{- end }}

{{/* Downward-API environment: the daemon's `node` label and, in sidecar mode, the pod's identity. */}}
{{- define "faultline.identityEnv" -}}
- name: NODE_NAME
  valueFrom:
    fieldRef:
      fieldPath: spec.nodeName
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: POD_UID
  valueFrom:
    fieldRef:
      fieldPath: metadata.uid
{{- end }}

{{/*
config.yaml. Context: dict "Values" "sources". The chart owns listen (server.bindAddress and
port), server.api_token_file (server.apiToken), state_dir, rules.paths and sources; .Values.config is merged over it (maps merge, lists replace).
*/}}
{{- define "faultline.configYaml" -}}
{{- $rules := dict "paths" (include "faultline.rulePaths" . | fromYamlArray) "watch" .Values.rules.watch }}
{{- if .Values.rules.overrides }}
{{- $_ := set $rules "overrides" .Values.rules.overrides }}
{{- end }}
{{- $server := default dict .Values.server }}
{{- $bind := default "0.0.0.0" $server.bindAddress }}
{{- $base := dict
      "listen" (printf "%s:%d" (ternary (printf "[%s]" $bind) $bind (contains ":" $bind)) (int .Values.port))
      "state_dir" (include "faultline.paths.state" .)
      "rules" $rules
      "sources" .sources }}
{{- with include "faultline.apiTokenSecret" . }}
{{- $key := default "token" $server.apiToken.key }}
{{- $_ := set $base "server" (dict "api_token_file" (printf "%s/%s" (include "faultline.paths.apiToken" $) $key)) }}
{{- end }}
{{- toYaml (mergeOverwrite $base (deepCopy .Values.config)) }}
{{- end }}
