{{/* The release's resource name prefix. */}}
{{- define "assessd.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "assessd.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "assessd.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "assessd.selector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Environment shared by every assessd container. */}}
{{- define "assessd.env" -}}
- name: ASSESSD_BASE_URL
  value: {{ .Values.baseURL | quote }}
- name: ASSESSD_LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef: {name: {{ .Values.database.existingSecret }}, key: {{ .Values.database.urlKey }}}
# LISTEN needs a session of its own; a URL other than DATABASE_URL also
# tells assessd a pooler stands in front (decision 0122).
- name: ASSESSD_DATABASE_DIRECT_URL
  valueFrom:
    secretKeyRef: {name: {{ .Values.database.existingSecret }}, key: {{ .Values.database.directUrlKey }}}
- name: TEMPORAL_ADDRESS
  value: {{ .Values.temporal.address | quote }}
- name: TEMPORAL_NAMESPACE
  value: {{ .Values.temporal.namespace | quote }}
- name: TEMPORAL_CREATE_NAMESPACE
  value: {{ .Values.temporal.createNamespace | quote }}
{{- with .Values.temporal.serverName }}
- name: TEMPORAL_TLS_SERVER_NAME
  value: {{ . | quote }}
{{- end }}
{{- if .Values.temporal.tlsSecret }}
- name: TEMPORAL_TLS_CERT
  value: /etc/assessd/temporal-tls/tls.crt
- name: TEMPORAL_TLS_KEY
  value: /etc/assessd/temporal-tls/tls.key
- name: TEMPORAL_TLS_CA
  value: /etc/assessd/temporal-tls/ca.crt
{{- end }}
{{- if .Values.temporal.apiKeySecret }}
- name: TEMPORAL_API_KEY
  valueFrom:
    secretKeyRef: {name: {{ .Values.temporal.apiKeySecret }}, key: {{ .Values.temporal.apiKeyKey }}}
{{- end }}
{{- end -}}

{{- define "assessd.temporalVolumeMounts" -}}
{{- if .Values.temporal.tlsSecret }}
- name: temporal-tls
  mountPath: /etc/assessd/temporal-tls
  readOnly: true
{{- end }}
{{- end -}}

{{- define "assessd.temporalVolumes" -}}
{{- if .Values.temporal.tlsSecret }}
- name: temporal-tls
  secret:
    secretName: {{ .Values.temporal.tlsSecret }}
{{- end }}
{{- end -}}
