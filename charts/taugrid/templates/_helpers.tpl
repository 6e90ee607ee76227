{{/* The name of the control plane's objects: <release>-taugrid, or the
     release name when it already says taugrid. */}}
{{- define "taugrid.fullname" -}}
{{- if contains "taugrid" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-taugrid" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "taugrid.labels" -}}
app.kubernetes.io/name: taugrid
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "taugrid.serverSelector" -}}
app.kubernetes.io/name: taugrid
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: server
{{- end -}}

{{- define "taugrid.agentSelector" -}}
app.kubernetes.io/name: taugrid
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: agent
{{- end -}}

{{/* The image: repository and tag, the tag defaulting to appVersion. */}}
{{- define "taugrid.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "taugrid.serviceAccountName" -}}
{{- if .Values.serviceAccount.name -}}
{{- .Values.serviceAccount.name -}}
{{- else -}}
{{- include "taugrid.fullname" . -}}
{{- end -}}
{{- end -}}

{{- define "taugrid.pvcName" -}}
{{- default (printf "%s-state" (include "taugrid.fullname" .)) .Values.server.persistence.existingClaim -}}
{{- end -}}
