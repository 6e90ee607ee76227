{{/* Labels of every object of the operator. */}}
{{- define "kuberay-operator.labels" -}}
app.kubernetes.io/name: kuberay
app.kubernetes.io/component: kuberay-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}
{{- define "kuberay-operator.selector" -}}
app.kubernetes.io/name: kuberay
app.kubernetes.io/component: kuberay-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
{{- define "kuberay-operator.name" -}}
{{ .Release.Name }}-kuberay-operator
{{- end -}}
