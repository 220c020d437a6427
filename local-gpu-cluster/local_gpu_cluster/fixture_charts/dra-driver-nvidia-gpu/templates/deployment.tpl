apiVersion: apps/v1
kind: Deployment
metadata:
  name: dra-driver-nvidia-gpu-controller
  labels:
    app: dra-driver-nvidia-gpu-controller
  annotations:
    driver-root: {{ .Values.nvidiaDriverRoot | quote }}
spec:
  replicas: 1
  selector:
    matchLabels:
      app: dra-driver-nvidia-gpu-controller
  template:
    metadata:
      labels:
        app: dra-driver-nvidia-gpu-controller
    spec:
      containers:
        - name: controller
          image: "registry.example.invalid/dra-driver-nvidia/dra-driver-nvidia-gpu:{{ .Chart.AppVersion }}"
