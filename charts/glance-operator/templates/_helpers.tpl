{{/*
Names. fullname prefixes every object: the release name when it holds the chart's name,
else <release>-<chart>; fullnameOverride outright. At most 40 characters, so that the
longest name built on it (<fullname>-validating-webhook-configuration) stays a valid one.
*/}}
{{- define "glance-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "glance-operator.fullname" -}}
{{- $name := "" -}}
{{- if .Values.fullnameOverride -}}
{{- $name = .Values.fullnameOverride -}}
{{- else if contains (include "glance-operator.name" .) .Release.Name -}}
{{- $name = .Release.Name -}}
{{- else -}}
{{- $name = printf "%s-%s" .Release.Name (include "glance-operator.name" .) -}}
{{- end -}}
{{- if gt (len $name) 40 -}}
{{- fail (printf "fullname %q is %d characters long: at most 40 (set fullnameOverride, or a shorter release name)" $name (len $name)) -}}
{{- end -}}
{{- $name | trimSuffix "-" -}}
{{- end -}}

{{/* The labels of every object: the operator's, then Helm's own. */}}
{{- define "glance-operator.labels" -}}
app.kubernetes.io/name: glance-operator
app.kubernetes.io/part-of: c5c3-glance
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* An object's metadata: name, namespace when namespaced, labels with its component. */}}
{{- define "glance-operator.metadata" -}}
{{- $root := index . 0 -}}
{{- $name := index . 1 -}}
{{- $component := index . 2 -}}
{{- $namespaced := index . 3 -}}
name: {{ printf "%s-%s" (include "glance-operator.fullname" $root) $name }}
{{- if $namespaced }}
namespace: {{ $root.Release.Namespace }}
{{- end }}
labels:
  app.kubernetes.io/component: {{ $component }}
  {{- include "glance-operator.labels" $root | nindent 2 }}
{{- end -}}

{{/* The manager pods' selector (as config/manager's). */}}
{{- define "glance-operator.selectorLabels" -}}
app.kubernetes.io/name: glance-operator
control-plane: controller-manager
{{- end -}}

{{- define "glance-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- printf "%s-controller-manager" (include "glance-operator.fullname" .) -}}
{{- else -}}
{{- required "serviceAccount.name: needed when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "glance-operator.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if .Values.image.digest -}}
{{- printf "%s:%s@%s" .Values.image.repository $tag .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/* The namespace a namespace-scoped operator watches; empty when cluster-wide. */}}
{{- define "glance-operator.watchNamespace" -}}
{{- if .Values.rbac.namespaceScoped -}}
{{- default .Release.Namespace .Values.rbac.watchNamespace -}}
{{- end -}}
{{- end -}}

{{- define "glance-operator.operatorCertificate" -}}
{{- if eq .Values.webhook.certificate "operator" -}}true{{- end -}}
{{- end -}}

{{- define "glance-operator.webhookSecret" -}}
{{- printf "%s-webhook-server-cert" (include "glance-operator.fullname" .) -}}
{{- end -}}

{{/* The ServiceAccount as a subject of a binding. */}}
{{- define "glance-operator.subjects" -}}
subjects:
  - kind: ServiceAccount
    name: {{ include "glance-operator.serviceAccountName" . }}
    namespace: {{ .Release.Namespace }}
{{- end -}}

{{/*
What the operator may do in the namespaces it watches: one list for the ClusterRole of a
cluster-wide install and the Role of a namespace-scoped one (config/rbac/role.yaml and
config/rbac-namespaced/role.yaml; docs/install.md explains every rule). The cluster-scoped
grants (ClusterSecretStores, PriorityClasses) are added by the caller.
*/}}
{{- define "glance-operator.managerRules" -}}
- apiGroups: ["glance.openstack.c5c3.io"]
  resources: ["glances", "glancebackends"]
  verbs: ["get", "list", "watch", "update", "patch"]
- apiGroups: ["glance.openstack.c5c3.io"]
  resources: ["glances/status", "glancebackends/status"]
  verbs: ["get", "update", "patch"]
- apiGroups: ["glance.openstack.c5c3.io"]
  resources: ["glances/finalizers"]
  verbs: ["update"]
- apiGroups: [""]
  resources: ["secrets", "configmaps"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: [""]
  resources: ["services"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: [""]
  resources: ["services/proxy"]
  verbs: ["get"]
- apiGroups: ["apps"]
  resources: ["deployments"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["policy"]
  resources: ["poddisruptionbudgets"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["autoscaling"]
  resources: ["horizontalpodautoscalers"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["networking.k8s.io"]
  resources: ["networkpolicies"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["batch"]
  resources: ["jobs", "cronjobs"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["gateway.networking.k8s.io"]
  resources: ["httproutes"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
{{- if .Values.rbac.namespaceScoped }}
- apiGroups: ["external-secrets.io"]
  resources: ["externalsecrets", "secretstores"]
  verbs: ["get", "list", "watch"]
{{- else }}
- apiGroups: ["external-secrets.io"]
  resources: ["externalsecrets", "secretstores", "clustersecretstores"]
  verbs: ["get", "list", "watch"]
{{- end }}
- apiGroups: ["k8s.mariadb.com"]
  resources: ["databases", "users", "grants"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["k8s.mariadb.com"]
  resources: ["mariadbs"]
  verbs: ["get", "list", "watch"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- if not .Values.rbac.namespaceScoped }}
- apiGroups: ["scheduling.k8s.io"]
  resources: ["priorityclasses"]
  verbs: ["get"]
{{- end }}
{{- end -}}
