{{- if or .Values.resources.computeDomains.enabled .Values.resources.gpus.enabled }}
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {{ .Chart.Name }}-kubelet-plugin
  labels:
    app.kubernetes.io/name: {{ .Chart.Name }}
spec:
  selector:
    matchLabels:
      {{ .Chart.Name }}-component: kubelet-plugin
  template:
    metadata:
      labels:
        {{ .Chart.Name }}-component: kubelet-plugin
    spec:
      {{- with .Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      initContainers:
        - name: init-container
          image: "registry.example.invalid/dra-driver-nvidia/dra-driver-nvidia-gpu:{{ .Chart.AppVersion }}"
          env:
            - name: NVIDIA_DRIVER_ROOT
              value: {{ .Values.nvidiaDriverRoot | quote }}
      containers:
        - name: gpus
          image: "registry.example.invalid/dra-driver-nvidia/dra-driver-nvidia-gpu:{{ .Chart.AppVersion }}"
      {{- with .Values.kubeletPlugin.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.kubeletPlugin.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end }}
