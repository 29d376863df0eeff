{{/*
Names and labels, in the shape `helm create` gives them: names cut to 63
characters (the DNS label limit) without a trailing dash.
*/}}

{{/* The app name: `app.kubernetes.io/name`. */}}
{{- define "trainer.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The workload's name: fullnameOverride, else <release>-<name> (the release alone when it contains the name). */}}
{{- define "trainer.fullname" -}}
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

{{/* `helm.sh/chart`: name-version. */}}
{{- define "trainer.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* `app.kubernetes.io/instance`: the instance value, else the release name. */}}
{{- define "trainer.instance" -}}
{{- default .Release.Name .Values.instance | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Selector labels (StatefulSet, Service): the instance alone, as in the overlays. */}}
{{- define "trainer.selectorLabels" -}}
app.kubernetes.io/instance: {{ include "trainer.instance" . }}
{{- end }}

{{/* Labels of every resource: the recommended app.kubernetes.io/* set and helm.sh/chart. */}}
{{- define "trainer.labels" -}}
helm.sh/chart: {{ include "trainer.chart" . }}
app.kubernetes.io/name: {{ include "trainer.name" . }}
{{ include "trainer.selectorLabels" . }}
{{- with .Values.partOf }}
app.kubernetes.io/part-of: {{ . }}
{{- end }}
{{- with .Values.component }}
app.kubernetes.io/component: {{ . }}
{{- end }}
{{- with .Chart.AppVersion }}
app.kubernetes.io/version: {{ . | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.labels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Labels of the job object (PyTorchJob, TrainJob, StatefulSet): every resource's labels plus Kueue's
queue label when scheduling.queueName is set (on the job object, never on a pod template). */}}
{{- define "trainer.jobLabels" -}}
{{ include "trainer.labels" . }}
{{- with .Values.scheduling.queueName }}
kueue.x-k8s.io/queue-name: {{ . }}
{{- end }}
{{- end }}

{{/* Kueue's topology request on a pod template (scheduling.topology; kdt.operators.kueue.facts):
required or preferred with its level, in the podset group `training-job` (a PyTorchJob's Master and
Workers placed in the same domain; the same annotations on every mode, so a job keeps them when it moves
from one mode to another), or unconstrained. Empty when no request. */}}
{{- define "trainer.topologyAnnotations" -}}
{{- $t := .Values.scheduling.topology }}
{{- if has $t.mode (list "required" "preferred") }}
kueue.x-k8s.io/podset-{{ $t.mode }}-topology: {{ $t.level }}
kueue.x-k8s.io/podset-group-name: training-job
{{- else if eq $t.mode "unconstrained" }}
kueue.x-k8s.io/podset-unconstrained-topology: "true"
{{- end }}
{{- end }}

{{/* The image reference. */}}
{{- define "trainer.image" -}}
{{- printf "%s:%s" .Values.image.repository .Values.image.tag }}
{{- end }}

{{/*
Derived counts: nodes, GPUs per node and processes per node are each set once
in values; everything else (replicas, --nnodes, numNodes, resources, world size) comes from here.
*/}}
{{- define "trainer.procsPerNode" -}}
{{- if ne (toString .Values.procsPerNode) "auto" }}
{{- int .Values.procsPerNode }}
{{- else if gt (int .Values.gpusPerNode) 0 }}
{{- int .Values.gpusPerNode }}
{{- end }}
{{- end }}

{{/* nodes x processes per node; empty when torchrun decides at run time (auto on CPU: its CPU count). */}}
{{- define "trainer.worldSize" -}}
{{- with include "trainer.procsPerNode" . }}
{{- mul (int $.Values.nodes) (int .) }}
{{- end }}
{{- end }}

{{/* Container resources with the GPU count added to requests and limits. */}}
{{- define "trainer.resources" -}}
{{- $gpu := .Values.gpuResource }}
{{- $res := deepCopy (.Values.resources | default dict) }}
{{- range $section := list "requests" "limits" }}
{{- if hasKey (get $res $section | default dict) $gpu }}
{{- fail (printf "resources.%s.%s: set the GPU count once, in gpusPerNode" $section $gpu) }}
{{- end }}
{{- if gt (int $.Values.gpusPerNode) 0 }}
{{- $m := get $res $section | default dict }}
{{- $_ := set $m $gpu (toString $.Values.gpusPerNode) }}
{{- $_ := set $res $section $m }}
{{- end }}
{{- end }}
{{- toYaml $res }}
{{- end }}

{{/* torchrun's --rdzv-conf value: key=value,... in the given order. */}}
{{- define "trainer.rdzvConf" -}}
{{- $items := list }}
{{- range .Values.torchrun.rdzvConf }}
{{- $items = append $items (printf "%s=%s" .key .value) }}
{{- end }}
{{- join "," $items }}
{{- end }}

{{/* The name of a volume's PVC. */}}
{{- define "trainer.claimName" -}}
{{- $root := index . 0 }}{{- $v := index . 1 }}
{{- if $v.existingClaim }}
{{- $v.existingClaim }}
{{- else }}
{{- $room := sub 62 (len $v.name) | int }}
{{- default (printf "%s-%s" (include "trainer.fullname" $root | trunc $room | trimSuffix "-") $v.name) $v.claim.name }}
{{- end }}
{{- end }}

{{/* volumeMounts of the training container. */}}
{{- define "trainer.volumeMounts" -}}
{{- range .Values.volumes }}
- name: {{ .name }}
  mountPath: {{ .mountPath }}
  {{- if .readOnly }}
  readOnly: true
  {{- end }}
{{- end }}
{{- if ne .Values.mode "trainjob" }}{{/* trainjob: in the runtime */}}
{{ include "trainer.gitVolumeMounts" . }}
{{- end }}
{{- end }}

{{/* Training code from Git (code.git.*, components/git-code/clone): the git-sync v4 init container
(kubernetes/git-sync v4.3.0 main.go: GITSYNC_* names, one-time mode), the checkout's volume and the
training container's read-only mount of it. Each empty when code.git.repo is. */}}
{{- define "trainer.gitInitContainers" -}}
{{- with .Values.code.git }}{{- if .repo }}
- name: git-sync
  image: {{ .image }}
  env:
    {{- if and .secret (eq .auth "ssh") }}
    - name: GITSYNC_SSH_KEY_FILE
      value: /etc/git-secret/ssh
    - name: GITSYNC_SSH_KNOWN_HOSTS
      value: "true"
    - name: GITSYNC_SSH_KNOWN_HOSTS_FILE
      value: /etc/git-secret/known_hosts
    {{- else if .secret }}
    - name: GITSYNC_USERNAME
      valueFrom:
        secretKeyRef: {name: {{ .secret }}, key: username}
    - name: GITSYNC_PASSWORD
      valueFrom:
        secretKeyRef: {name: {{ .secret }}, key: password}
    {{- end }}
    - name: GITSYNC_REPO
      value: {{ .repo | quote }}
    - name: GITSYNC_REF
      value: {{ .commit | quote }}
    - name: GITSYNC_ROOT
      value: /git
    - name: GITSYNC_LINK
      value: {{ base .path | quote }}
    - name: GITSYNC_DEPTH
      value: "1"
    - name: GITSYNC_ONE_TIME
      value: "true"
  securityContext:
    runAsUser: 65533
    runAsGroup: 65533
    allowPrivilegeEscalation: false
    capabilities:
      drop: [ALL]
  resources:
    requests:
      cpu: 100m
      memory: 256Mi
    limits:
      memory: 1Gi
  volumeMounts:
    - name: git-code
      mountPath: /git
    {{- if and .secret (eq .auth "ssh") }}
    - name: git-secret
      mountPath: /etc/git-secret
      readOnly: true
    {{- end }}
{{- end }}{{- end }}
{{- end }}

{{- define "trainer.gitVolumeMounts" -}}
{{- with .Values.code.git }}{{- if .repo }}
- name: git-code
  mountPath: {{ dir .path }}
  readOnly: true
{{- end }}{{- end }}
{{- end }}

{{- define "trainer.gitVolumes" -}}
{{- with .Values.code.git }}{{- if .repo }}
- name: git-code
  emptyDir:
    sizeLimit: 2Gi
{{- if and .secret (eq .auth "ssh") }}
- name: git-secret
  secret:
    secretName: {{ .secret }}
    defaultMode: 0400
{{- end }}
{{- end }}{{- end }}
{{- end }}

{{/* volumes of the training pod. */}}
{{- define "trainer.volumes" -}}
{{- range .Values.volumes }}
- name: {{ .name }}
  {{- if .emptyDir }}
  emptyDir:
    {{- toYaml .emptyDir | nindent 4 }}
  {{- else if hasKey . "emptyDir" }}
  emptyDir: {}
  {{- else }}
  persistentVolumeClaim:
    claimName: {{ include "trainer.claimName" (list $ .) }}
  {{- end }}
{{- end }}
{{- if ne .Values.mode "trainjob" }}
{{ include "trainer.gitVolumes" . }}
{{- end }}
{{- end }}

{{/* Scheduling and identity fields shared by every pod spec (each left out when empty). */}}
{{- define "trainer.podScheduling" -}}
{{- with .Values.serviceAccountName }}
serviceAccountName: {{ . }}
{{- end }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* Placement only a pod spec itself can carry (a TrainJob's runtimePatches and podTemplateOverrides
have neither field): the PriorityClass and the topology spread. scheduling.onePodPerNode spreads the
job's own pods over nodes, picking them as each operator labels them (the job's name is read from
each pod by matchLabelKeys, so a runtime spreads every TrainJob of its own). */}}
{{- define "trainer.podPlacement" -}}
{{- with .Values.scheduling.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- if or .Values.scheduling.onePodPerNode .Values.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- if .Values.scheduling.onePodPerNode }}
  - topologyKey: kubernetes.io/hostname
    maxSkew: 1
    {{- /* a StatefulSet has no gang: a hard spread would let the pods that fit start and wait */}}
    whenUnsatisfiable: {{ ternary "ScheduleAnyway" "DoNotSchedule" (eq .Values.mode "statefulset") }}
    labelSelector:
      matchExpressions:
        {{- if eq .Values.mode "statefulset" }}
        - {key: apps.kubernetes.io/pod-index, operator: Exists}
        {{- else if has .Values.mode (list "trainjob" "tensorflow") }}
        - {key: jobset.sigs.k8s.io/replicatedjob-name, operator: In, values: [{{ ternary "node" .Values.trainJob.targetJob (eq .Values.mode "tensorflow") }}]}
        {{- else }}
        - {key: training.kubeflow.org/replica-type, operator: Exists}
        {{- end }}
    matchLabelKeys:
      {{- if eq .Values.mode "statefulset" }}
      - app.kubernetes.io/instance
      {{- else if has .Values.mode (list "trainjob" "tensorflow") }}
      - jobset.sigs.k8s.io/jobset-name
      {{- else }}
      - training.kubeflow.org/job-name
      {{- end }}
  {{- end }}
  {{- with .Values.topologySpreadConstraints }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}
{{- end }}

{{/* The values that are meaningless or contradictory for the chosen mode fail here, with their path. */}}
{{- define "trainer.check" -}}
{{- if .Values.code.git.repo }}
{{- if not (has .Values.mode (list "pytorchjob" "elastic" "statefulset" "trainjob")) }}
{{- fail (printf "code.git: mode %s does not take code from Git; use pytorchjob, elastic, statefulset or trainjob" .Values.mode) }}
{{- end }}
{{- if and (eq .Values.mode "trainjob") (not .Values.trainJob.runtime.create) }}
{{- fail "code.git goes into the runtime's pods (a TrainJob's patches can only change containers the runtime has): add it to the existing runtime (components/git-code/trainjob), or trainJob.runtime.create" }}
{{- end }}
{{- if not (regexMatch "^([0-9a-f]{40}|[0-9a-f]{64})$" .Values.code.git.commit) }}
{{- fail (printf "code.git.commit %q: a full commit SHA (git rev-parse HEAD); a branch or tag is resolved again by every pod that starts later" .Values.code.git.commit) }}
{{- end }}
{{- if not (has .Values.code.git.auth (list "token" "ssh")) }}
{{- fail (printf "code.git.auth %q: token or ssh" .Values.code.git.auth) }}
{{- end }}
{{- end }}
{{- if and (eq .Values.mode "elastic") (gt (int .Values.elastic.minNodes) (int .Values.nodes)) }}
{{- fail (printf "elastic.minNodes (%d) is more than nodes (%d)" (int .Values.elastic.minNodes) (int .Values.nodes)) }}
{{- end }}
{{- if and (eq .Values.mode "trainjob") (eq .Values.trainJob.trainerVersion "2.1") .Values.trainJob.activeDeadlineSeconds (not .Values.trainJob.runtime.create) }}
{{- fail "trainJob.activeDeadlineSeconds: Trainer 2.1 has no TrainJob deadline; it goes into the created runtime's Job (trainJob.runtime.create), or use trainerVersion 2.2+" }}
{{- end }}
{{- if and (eq .Values.mode "trainjob") (not .Values.trainJob.runtime.create) (not .Values.trainJob.runtime.name) }}
{{- fail "trainJob.runtime.name: name the existing runtime when trainJob.runtime.create is false" }}
{{- end }}
{{- if and (eq .Values.mode "trainjob") (not .Values.trainJob.runtime.create) (include "trainer.podPlacement" . | trim) }}
{{- fail "scheduling.priorityClassName, scheduling.onePodPerNode and topologySpreadConstraints go into the runtime's pods (a TrainJob's patches have no such fields): set them in the existing runtime, or trainJob.runtime.create" }}
{{- end }}
{{- if and .Values.faultTolerance.enabled (not (has .Values.mode (list "pytorchjob" "trainjob" "statefulset"))) }}
{{- fail (printf "faultTolerance.enabled: mode %s has no replica groups; use pytorchjob, trainjob or statefulset" .Values.mode) }}
{{- end }}
{{- if and .Values.faultTolerance.enabled (or (lt (int .Values.faultTolerance.minReplicaGroups) 1) (gt (int .Values.faultTolerance.minReplicaGroups) (int .Values.nodes))) }}
{{- fail (printf "faultTolerance.minReplicaGroups (%d) must be 1..nodes (%d): more than the groups and no quorum ever forms" (int .Values.faultTolerance.minReplicaGroups) (int .Values.nodes)) }}
{{- end }}
{{- if and .Values.faultTolerance.enabled (eq .Values.mode "trainjob") (not .Values.trainJob.runtime.create) }}
{{- fail "faultTolerance.enabled with trainjob: the groups' pods restart one by one only in the runtime the chart creates (its node Job's backoffLimit and restartPolicy): set trainJob.runtime.create" }}
{{- end }}
{{- if and (eq .Values.mode "trainjob") (not .Values.trainJob.runtime.create) .Values.scheduling.topology.mode }}
{{- fail "scheduling.topology goes into the runtime's pods: set it in the existing runtime (components/topology/trainjob), or trainJob.runtime.create" }}
{{- end }}
{{- if and .Values.scheduling.gang.enabled (not (has .Values.scheduling.gang.scheduler (list "coscheduling" "volcano"))) }}
{{- fail (printf "scheduling.gang.scheduler %q: coscheduling or volcano" .Values.scheduling.gang.scheduler) }}
{{- end }}
{{- if and (eq .Values.mode "statefulset") .Values.scheduling.gang.enabled }}
{{- fail "scheduling.gang.enabled: a StatefulSet has no gang scheduling of its own (queue it with scheduling.queueName; components/kueue/README.md)" }}
{{- end }}
{{- if and (eq .Values.mode "statefulset") (gt (len (include "trainer.fullname" .)) 52) }}
{{- fail (printf "the StatefulSet name %q is longer than 52 characters: its pods' controller-revision-hash label would exceed 63" (include "trainer.fullname" .)) }}
{{- end }}
{{- end }}

{{/* One word for the statefulset mode's bash script: as is when it holds no shell syntax, else
single-quoted, so that each value reaches torchrun as one literal argument, exactly as a container
arg would in the other modes (the kubelet still expands $(VAR) before bash runs). */}}
{{- define "trainer.shellWord" -}}
{{- if regexMatch "^[A-Za-z0-9_./=:,@%+-]+$" . -}}
{{ . }}
{{- else -}}
'{{ replace "'" "'\\''" . }}'
{{- end -}}
{{- end }}

{{/* faultTolerance: the env of a replica group's training container, after the values' env (the order
components/torchft/ writes them). Arguments: the root context and the downward-API field of the pod's own index. */}}
{{- define "trainer.ftEnv" -}}
{{- $ := index . 0 }}{{- $ft := $.Values.faultTolerance }}
- name: TRAINKIT_FAULT_TOLERANCE
  value: torchft
- name: REPLICA_GROUP_ID
  valueFrom:
    fieldRef:
      fieldPath: {{ index . 1 }}
- name: NUM_REPLICA_GROUPS
  value: {{ $.Values.nodes | quote }}
- name: TRAINKIT_FT_MIN_GROUPS
  value: {{ $ft.minReplicaGroups | quote }}
- name: TORCHFT_LIGHTHOUSE
  value: {{ printf "http://%s:%v" $ft.lighthouse.name $ft.lighthouse.port }}
- name: POD_IP
  valueFrom:
    fieldRef:
      fieldPath: status.podIP
- name: RUST_LOG
  value: warn
{{- end }}

{{/* faultTolerance: the label that the Lighthouse's NetworkPolicy admits. */}}
{{- define "trainer.ftPodLabel" -}}
torchft.torch-k8s.io/lighthouse: {{ .Values.faultTolerance.lighthouse.name }}
{{- end }}

{{/* faultTolerance: a one-pod torchrun per group (--standalone: the group's processes rendezvous inside the
pod; --nnodes=1 overrides the operators' PET_NNODES), restarting its workers in place. */}}
{{- define "trainer.ftLaunchFlags" -}}
- --standalone
- --nnodes=1
{{- with .Values.torchrun.maxRestarts }}
- --max-restarts={{ . }}
{{- end }}
{{- end }}
