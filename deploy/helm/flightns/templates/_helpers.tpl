{{/*
The chart's names, labels and the checks every render runs: a value the
schema cannot judge alone (one value against another) fails here, with
a message that names the value to set.
*/}}

{{- define "flightns.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "flightns.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "flightns.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "flightns.selectorLabels" -}}
app.kubernetes.io/name: {{ include "flightns.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "flightns.labels" -}}
helm.sh/chart: {{ include "flightns.chart" . }}
{{ include "flightns.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "flightns.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "flightns.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Secrets the pods read: the chart's own, or the existing one named. */}}
{{- define "flightns.redisSecret" -}}
{{- .Values.redis.existingSecret | default (printf "%s-redis" (include "flightns.fullname" .)) }}
{{- end }}
{{- define "flightns.s3Secret" -}}
{{- .Values.s3.existingSecret | default (printf "%s-s3" (include "flightns.fullname" .)) }}
{{- end }}
{{- define "flightns.authSecret" -}}
{{- .Values.auth.existingSecret | default (printf "%s-auth" (include "flightns.fullname" .)) }}
{{- end }}
{{- define "flightns.tlsSecret" -}}
{{- .Values.tls.existingSecret | default (printf "%s-tls" (include "flightns.fullname" .)) }}
{{- end }}

{{/* Whether the pods get S3 keys and an auth file. */}}
{{- define "flightns.s3Keys" -}}
{{- if or .Values.s3.existingSecret .Values.s3.accessKeyId }}true{{ end }}
{{- end }}
{{- define "flightns.auth" -}}
{{- if or .Values.auth.existingSecret .Values.auth.file }}true{{ end }}
{{- end }}

{{/* validate fails the render on what is missing or contradictory. */}}
{{- define "flightns.validate" -}}
{{- if not (or .Values.redis.url .Values.redis.existingSecret) }}
{{- fail "flightns: set redis.url (redis://, redis+sentinel:// or redis+cluster://) or redis.existingSecret: the replicas share an external Redis" }}
{{- end }}
{{- if not .Values.root }}
{{- fail "flightns: set root to the catalog's s3://bucket/prefix: the replicas share an object-store root" }}
{{- end }}
{{- if not (hasPrefix "s3://" .Values.root) }}
{{- fail (printf "flightns: root %q: want s3://bucket/prefix" .Values.root) }}
{{- end }}
{{- if and .Values.redis.url .Values.redis.existingSecret }}
{{- fail "flightns: set redis.url or redis.existingSecret, not both" }}
{{- end }}
{{- if and .Values.s3.existingSecret (or .Values.s3.accessKeyId .Values.s3.secretAccessKey) }}
{{- fail "flightns: set s3.accessKeyId and s3.secretAccessKey or s3.existingSecret, not both" }}
{{- end }}
{{- if and (not .Values.s3.existingSecret) (ne (empty .Values.s3.accessKeyId) (empty .Values.s3.secretAccessKey)) }}
{{- fail "flightns: set both s3.accessKeyId and s3.secretAccessKey, or neither" }}
{{- end }}
{{- if and .Values.auth.file .Values.auth.existingSecret }}
{{- fail "flightns: set auth.file or auth.existingSecret, not both" }}
{{- end }}
{{- if .Values.tls.enabled }}
{{- if and .Values.tls.existingSecret (or .Values.tls.cert .Values.tls.key .Values.tls.clientCAPEM) }}
{{- fail "flightns: set tls.cert, tls.key (and tls.clientCAPEM) or tls.existingSecret, not both" }}
{{- end }}
{{- if and (not .Values.tls.existingSecret) (or (not .Values.tls.cert) (not .Values.tls.key)) }}
{{- fail "flightns: tls.enabled needs tls.cert and tls.key, or tls.existingSecret" }}
{{- end }}
{{- if and .Values.tls.clientCA (not .Values.tls.existingSecret) (not .Values.tls.clientCAPEM) }}
{{- fail "flightns: tls.clientCA needs tls.clientCAPEM, or tls.existingSecret with a ca.crt" }}
{{- end }}
{{- end }}
{{- if and .Values.vend.enabled (not .Values.vend.roleArn) }}
{{- fail "flightns: vend.enabled needs vend.roleArn, the role the server's credentials assume" }}
{{- end }}
{{- if le (int .Values.terminationGracePeriodSeconds) (int .Values.shutdownTimeoutSeconds) }}
{{- fail (printf "flightns: terminationGracePeriodSeconds (%d) must exceed shutdownTimeoutSeconds (%d), or running requests are killed before they drain" (int .Values.terminationGracePeriodSeconds) (int .Values.shutdownTimeoutSeconds)) }}
{{- end }}
{{- end }}
