{{/* Names, labels and the values several templates share. */}}

{{- define "hone.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* <release>-<chart>, or the release name alone when it already holds the chart name. */}}
{{- define "hone.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "hone.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "hone.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Selector labels of one component: call with (dict "ctx" $ "component" "controller"). */}}
{{- define "hone.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hone.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "hone.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "hone.controllerName" -}}
{{- printf "%s-controller" (include "hone.fullname" .) }}
{{- end }}

{{- define "hone.workerName" -}}
{{- printf "%s-worker" (include "hone.fullname" .) }}
{{- end }}

{{/* The Secret holding the admin key and the worker enrolment token; fails, naming the value,
     when neither the values nor existingSecret give them (the schema checks this first). */}}
{{- define "hone.secretName" -}}
{{- if .Values.controller.existingSecret }}
{{- .Values.controller.existingSecret }}
{{- else }}
{{- $_ := required "controller.adminKey is required (or set controller.existingSecret)" .Values.controller.adminKey }}
{{- $_ := required "controller.workerToken is required (or set controller.existingSecret)" .Values.controller.workerToken }}
{{- printf "%s-secret" (include "hone.fullname" .) }}
{{- end }}
{{- end }}

{{/* The controller's URL inside the cluster, from its Service's name. */}}
{{- define "hone.controllerURL" -}}
{{- printf "http://%s.%s.svc:%d" (include "hone.controllerName" .) .Release.Namespace (int .Values.controller.service.port) }}
{{- end }}

{{- define "hone.dataClaim" -}}
{{- if eq .Values.storage.mode "shared" }}
{{- default (printf "%s-shared" (include "hone.fullname" .)) .Values.storage.shared.existingClaim }}
{{- else }}
{{- default (printf "%s-data" (include "hone.fullname" .)) .Values.controller.persistence.existingClaim }}
{{- end }}
{{- end }}
