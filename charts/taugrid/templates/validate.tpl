{{- /* Checks across values that values.schema.json cannot state; renders
     nothing, fails the install with a message naming the values. */ -}}
{{- define "taugrid.validate" -}}
{{- $p := .Values.platform -}}
{{- if and $p.fairSharing.enabled .Values.kueue.enabled -}}
{{- $cfg := dig "managerConfig" "controllerManagerConfigYaml" "" .Values.kueue -}}
{{- if not (regexMatch "(?m)^fairSharing:" $cfg) -}}
{{- fail "platform.fairSharing.enabled is true, but kueue.managerConfig.controllerManagerConfigYaml has no top-level fairSharing: section, so the Kueue this chart installs would ignore the weights (charts/taugrid/examples/fair-sharing.yaml shows one)" -}}
{{- end -}}
{{- end -}}
{{- $flavors := dict -}}
{{- range $p.gpuClasses -}}{{- $_ := set $flavors .name true -}}{{- end -}}
{{- $queues := dict -}}
{{- range $p.clusterQueues -}}
{{- $cq := .name -}}
{{- $_ := set $queues .name true -}}
{{- range .resourceGroups -}}
{{- range .flavors -}}
{{- if not (hasKey $flavors .name) -}}
{{- fail (printf "platform.clusterQueues[%s]: flavor %q is not one of platform.gpuClasses" $cq .name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $namespaces := dict -}}
{{- range $p.workspaces -}}
{{- if not (hasKey $queues .clusterQueue) -}}
{{- fail (printf "platform.workspaces[%s]: clusterQueue %q is not one of platform.clusterQueues" .namespace .clusterQueue) -}}
{{- end -}}
{{- if hasKey $namespaces .namespace -}}
{{- fail (printf "platform.workspaces: namespace %q appears twice" .namespace) -}}
{{- end -}}
{{- $_ := set $namespaces .namespace true -}}
{{- end -}}
{{- end -}}
