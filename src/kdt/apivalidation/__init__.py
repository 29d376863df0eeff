"""The API server's own validation, beyond the OpenAPI schema: what `kubectl apply` would be refused.

    dispatch.check(doc, kubernetes_version, custom) -> list[Finding]

The schema says which fields exist and their types; the API server then runs
each kind's Validate function (kubernetes/kubernetes pkg/apis/<group>/validation,
k8s.io/apimachinery pkg/util/validation, pkg/api/resource) on the object after
its defaults, and refuses it with every error found. This package ports the
rules a training job meets, one module per area:

- kdt.formats (below every stage: the operators' webhooks read it too): DNS labels and subdomains, label
  keys and values, port and env names (k8s.io/apimachinery pkg/util/validation);
- kdt.quantity (below the stages, the Kueue Workload's requests read it too): the resource.Quantity
  grammar and value;
- meta.py: object names per kind, generateName, namespaces, labels, annotations, selectors;
- pods.py: pod specs: containers, ports, env, volumes, probes, lifecycle, resources;
- workloads.py: Job, CronJob, StatefulSet and the controllers, and the pod templates
  every operator kind declares to the registry (kdt.kinds: PyTorchJob and the other
  Training Operator jobs, JobSet, the runtimes) and TrainJob's trainer;
- objects.py: Service, PersistentVolumeClaim, ConfigMap, Secret;
- crd.py: a CustomResourceDefinition itself (apiextensions-apiserver validation.go): its name, group,
  versions (one storage version), names, and schemas (known types, structural, list and map types);
- dispatch.py: which checks each kind gets (asks kdt.kinds), and the rules (`RULES`).

Each finding is an error with a rule of RULES (`api-<area>`), located at the
field. Pod templates inside an operator's kind are checked as the pods the
operator creates will be (the API server refuses those pods, so the run never
starts): what the operator fills or overwrites is left out (workloads.py).
bench/apiserver.py holds the format and quantity functions against the upstream
test tables; tests/validate/test_apivalidation.py has a fixture per rule.
"""
