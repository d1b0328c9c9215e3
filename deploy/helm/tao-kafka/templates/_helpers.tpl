{{/* Names and labels. */}}
{{- define "tao-kafka.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "tao-kafka.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "tao-kafka.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "tao-kafka.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: tao-kafka
{{- end -}}

{{/* Selector labels of one process: (dict "root" $ "process" "thought"). */}}
{{- define "tao-kafka.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tao-kafka.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .process }}
{{- end -}}

{{- define "tao-kafka.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/* The Secret the processes read their secret variables from: existingSecret, or the chart's. */}}
{{- define "tao-kafka.secretName" -}}
{{- default (include "tao-kafka.fullname" .) .Values.existingSecret -}}
{{- end -}}

{{/* Whether a secret variable is available: set in `secrets`, or possibly in existingSecret. */}}
{{- define "tao-kafka.hasSecret" -}}
{{- if or .root.Values.existingSecret (index .root.Values.secrets .name) -}}true{{- end -}}
{{- end -}}

{{/* The TAO_NAMESPACE prefix of topics and consumer groups ("" or "<namespace>."). */}}
{{- define "tao-kafka.prefix" -}}
{{- with .Values.config.TAO_NAMESPACE -}}{{ . }}.{{- end -}}
{{- end -}}

{{/* A value of `config` as an environment variable's string ("" when unset). */}}
{{- define "tao-kafka.envValue" -}}
{{- if kindIs "float64" . -}}{{ . | int64 }}{{- else -}}{{ . }}{{- end -}}
{{- end -}}

{{/*
The effective setting of a variable for a process: its own config, then the global config.
(dict "root" $ "own" .Values.stages.thought.config "name" "KAFKA_SSL")
*/}}
{{- define "tao-kafka.setting" -}}
{{- $own := default dict .own -}}
{{- if and (hasKey $own .name) (ne (toString (index $own .name)) "") -}}
{{- include "tao-kafka.envValue" (index $own .name) -}}
{{- else -}}
{{- include "tao-kafka.envValue" (default "" (index .root.Values.config .name)) -}}
{{- end -}}
{{- end -}}

{{/*
The environment of one process: (dict "root" $ "process" "thought" "own" <its config> "inline" false).
The global `config` comes from the ConfigMap (envFrom, see tao-kafka.envFrom), or inline for the
pre-install Job (the ConfigMap does not exist yet when it runs). Then: the process's own config,
what the chart sets (TAO_BIND_HOST=0.0.0.0 where a probe or a Service reaches a port: the image binds
to 127.0.0.1; ports, KAFKA_SSL_CA_FILE), the secrets this process reads, and extraEnv.
*/}}
{{- define "tao-kafka.env" -}}
{{- $root := .root -}}
{{- $gen := include "tao-kafka.generated" $root | fromJson -}}
{{- $own := default dict .own -}}
{{- $names := list -}}
{{- if .inline -}}
{{- range $name, $value := $root.Values.config }}
{{- if and (ne (toString $value) "") (not (hasKey $own $name)) }}
- name: {{ $name }}
  value: {{ include "tao-kafka.envValue" $value | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- range $name, $value := $own }}
{{- if ne (toString $value) "" }}
- name: {{ $name }}
  value: {{ include "tao-kafka.envValue" $value | quote }}
{{- end }}
{{- end }}
{{- if has .process (list "thought" "action" "observation" "ingress" "tools") }}
- name: TAO_BIND_HOST
  value: "0.0.0.0"
{{- end }}
{{- if hasKey $gen.opsPorts .process }}
- name: TAO_OPS_PORT
  value: {{ index $gen.opsPorts .process | int | toString | quote }}
{{- end }}
{{- if eq .process "ingress" }}
- name: TAO_INGRESS_PORT
  value: {{ $gen.ingressPort | int | toString | quote }}
{{- end }}
{{- if eq .process "tools" }}
- name: TAO_TOOLS_PORT
  value: {{ $gen.toolsPort | int | toString | quote }}
{{- end }}
{{- if and $root.Values.tools.enabled (ne .process "tools") (eq (include "tao-kafka.setting" (dict "root" $root "own" $own "name" "TAO_DEMO_TOOL_ORIGIN")) "") }}
- name: TAO_DEMO_TOOL_ORIGIN
  value: {{ printf "http://%s-tools:%d" (include "tao-kafka.fullname" $root) ($gen.toolsPort | int) | quote }}
{{- end }}
{{- if and $root.Values.kafka.caSecret.name (ne .process "tools") }}
- name: KAFKA_SSL_CA_FILE
  value: {{ printf "/etc/tao/kafka-ca/%s" $root.Values.kafka.caSecret.key | quote }}
{{- end }}
{{- range $name := index $gen.secrets .process }}
{{- if include "tao-kafka.hasSecret" (dict "root" $root "name" $name) }}
- name: {{ $name }}
  valueFrom:
    secretKeyRef:
      name: {{ if $.hookSecret }}{{ $.hookSecret }}{{ else }}{{ include "tao-kafka.secretName" $root }}{{ end }}
      key: {{ $name }}
      optional: true
{{- end }}
{{- end }}
{{- with $root.Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Volumes and mounts every process gets: a writable /tmp (the root filesystem is read-only), the CA, extras. */}}
{{- define "tao-kafka.volumes" -}}
- name: tmp
  emptyDir: { sizeLimit: 64Mi }
{{- with .Values.kafka.caSecret.name }}
- name: kafka-ca
  secret:
    secretName: {{ . }}
{{- end }}
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "tao-kafka.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
{{- if .Values.kafka.caSecret.name }}
- name: kafka-ca
  mountPath: /etc/tao/kafka-ca
  readOnly: true
{{- end }}
{{- with .Values.extraVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Scheduling and security shared by every pod. */}}
{{- define "tao-kafka.podCommon" -}}
automountServiceAccountToken: false
# No TAO_<SERVICE>_SERVICE_HOST, _PORT, ... of the namespace's Services in the environment: a Service
# named tao-kafka or tao-ingress would set TAO_KAFKA_PORT or TAO_INGRESS_PORT (the processes ignore
# the other links of a release named tao, but not a setting's name).
enableServiceLinks: false
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
{{ toYaml . }}
{{- end }}
securityContext:
{{ toYaml .Values.podSecurityContext | indent 2 }}
{{- with .Values.nodeSelector }}
nodeSelector:
{{ toYaml . | indent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
{{ toYaml . }}
{{- end }}
{{- with .Values.affinity }}
affinity:
{{ toYaml . | indent 2 }}
{{- end }}
{{- with .Values.topologySpreadConstraints }}
topologySpreadConstraints:
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* A /health probe on a named port: (dict "probe" .Values.probes.liveness "port" "ops"). */}}
{{- define "tao-kafka.probe" -}}
httpGet:
  path: /health
  port: {{ .port }}
periodSeconds: {{ .probe.periodSeconds }}
timeoutSeconds: {{ .probe.timeoutSeconds }}
failureThreshold: {{ .probe.failureThreshold }}
{{- end -}}

{{/*
One process's Deployment: (dict "root" $ "process" "thought" "values" .Values.stages.thought
"args" (list "run" "thought") "port" 9401 "portName" "ops" "autoscaled" false).
*/}}
{{- define "tao-kafka.deployment" -}}
{{- $root := .root -}}
{{- $v := .values -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "tao-kafka.fullname" $root }}-{{ .process }}
  labels:
{{ include "tao-kafka.labels" $root | indent 4 }}
    app.kubernetes.io/component: {{ .process }}
spec:
{{- if not .autoscaled }}
  replicas: {{ $v.replicas }}
{{- end }}
  revisionHistoryLimit: 5
  selector:
    matchLabels:
{{ include "tao-kafka.selectorLabels" . | indent 6 }}
  template:
    metadata:
      labels:
{{ include "tao-kafka.selectorLabels" . | indent 8 }}
{{- with $root.Values.podLabels }}
{{ toYaml . | indent 8 }}
{{- end }}
      annotations:
        # A changed ConfigMap or Secret rolls the pods.
        checksum/config: {{ include (print $root.Template.BasePath "/configmap.yaml") $root | sha256sum }}
        checksum/secret: {{ include (print $root.Template.BasePath "/secret.yaml") $root | sha256sum }}
{{- if and $root.Values.metricsAnnotations .port }}
        prometheus.io/scrape: "true"
        prometheus.io/port: {{ .port | quote }}
        prometheus.io/path: /metrics
{{- end }}
{{- with (merge (dict) (default dict $v.podAnnotations) (default dict $root.Values.podAnnotations)) }}
{{ toYaml . | indent 8 }}
{{- end }}
    spec:
{{ include "tao-kafka.podCommon" $root | trim | indent 6 }}
      terminationGracePeriodSeconds: {{ $root.Values.terminationGracePeriodSeconds }}
      containers:
        - name: {{ .process }}
          image: {{ include "tao-kafka.image" $root | quote }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          args:
{{ toYaml .args | indent 12 }}
{{- if .port }}
          ports:
            - name: {{ .portName }}
              containerPort: {{ .port }}
              protocol: TCP
{{- end }}
          envFrom:
            - configMapRef:
                name: {{ include "tao-kafka.fullname" $root }}
{{- with $root.Values.extraEnvFrom }}
{{ toYaml . | indent 12 }}
{{- end }}
          env:
{{ include "tao-kafka.env" (dict "root" $root "process" .process "own" $v.config) | trim | indent 12 }}
{{- if .port }}
          startupProbe:
{{ include "tao-kafka.probe" (dict "probe" $root.Values.probes.startup "port" .portName) | indent 12 }}
          readinessProbe:
{{ include "tao-kafka.probe" (dict "probe" $root.Values.probes.readiness "port" .portName) | indent 12 }}
          livenessProbe:
{{ include "tao-kafka.probe" (dict "probe" $root.Values.probes.liveness "port" .portName) | indent 12 }}
{{- end }}
          resources:
{{ toYaml $v.resources | indent 12 }}
          securityContext:
{{ toYaml $root.Values.securityContext | indent 12 }}
          volumeMounts:
{{ include "tao-kafka.volumeMounts" $root | trim | indent 12 }}
      volumes:
{{ include "tao-kafka.volumes" $root | trim | indent 8 }}
{{- end -}}

{{/* One process's PodDisruptionBudget: (dict "root" $ "process" "thought" "values" .Values.stages.thought). */}}
{{- define "tao-kafka.pdb" -}}
{{- if .values.pdb.enabled }}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "tao-kafka.fullname" .root }}-{{ .process }}
  labels:
{{ include "tao-kafka.labels" .root | indent 4 }}
    app.kubernetes.io/component: {{ .process }}
spec:
  maxUnavailable: {{ .values.pdb.maxUnavailable }}
  selector:
    matchLabels:
{{ include "tao-kafka.selectorLabels" . | indent 6 }}
{{- end }}
{{- end -}}
