{{- if .Values.resources.gpus.enabled }}
apiVersion: {{ .Values.resourceApiVersion }}
kind: DeviceClass
metadata:
  name: gpu.nvidia.com
spec:
  selectors:
    - cel:
        expression: "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"
---
apiVersion: {{ .Values.resourceApiVersion }}
kind: DeviceClass
metadata:
  name: mig.nvidia.com
spec:
  selectors:
    - cel:
        expression: "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'"
{{- end }}
