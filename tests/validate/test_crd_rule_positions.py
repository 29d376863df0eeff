"""Every CEL rule (`x-kubernetes-validations`) of every CRD is evaluated wherever its schema node sits (#43).

The API server evaluates a rule at every value its schema node describes: the object, a nested object, each
item of a list, each value of a map (additionalProperties), at any depth (apiextensions-apiserver v0.36.3
pkg/apiserver/schema/cel/validation.go: Validator.validate recurses through properties, items and
additionalProperties). Kueue v0.19.2's ClusterQueue rule on the `resourceGroups` item,
`self.flavors.all(x, size(x.resources) == size(self.coveredResources))`, passed here: the engine's cache key
(the part of the value a rule reads, kdt.schemas.crd_rules._project) dropped the `self.coveredResources` the
macro's body reads, the rule failed to evaluate, and a CRD's rule that fails to evaluate said nothing.

Per CRD set (the committed sets of kdt.schemas.crd_sets and the Trainer/JobSet rule tables of
kdt.schemas.crd_rules), the tests below:
- count the rules by position (root, nested field, list item, map value) and depth, and assert the engine
  visits each rule at each value its path names, in an object built to reach them all;
- evaluate each rule on a value filled from its own schema node, whole and as the engine's cache projects
  it, and assert the same verdict;
- and, for the rules whose message an object can trigger, an object that breaks each one is refused by
  `kdt validate` at the rule's location with the rule's own message.
"""
from __future__ import annotations

import collections
import json

import pytest

from kdt import versions
from kdt.documents import load_stream
from kdt.schemas import crd_rules as R
from kdt.schemas import crd_sets, registry
from kdt.validate import validate_documents

K8S = versions.KUBERNETES_DEFAULT


# The rule tables and how to read their schemas ------------------------------------------------------------

def _raw_crd_tables(name: str):
    """(label, trie of the engine, schema node at a path) of every version of every CRD of a committed set."""
    payload = json.loads(crd_sets.output_path(name).read_text())
    pools = {d: p for p in crd_sets.pools(name) for d in p.rules}
    for crd in payload["crds"]:
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for v in crd["spec"]["versions"]:
            definition = f"crd.{group}.{v['name']}.{kind}"
            schema = v["schema"]["openAPIV3Schema"]
            trie = pools[definition].rules[definition] if definition in pools else None
            yield f"{name} {group}/{v['name']} {kind}", trie, _raw_at(schema)


def _raw_at(schema: dict):
    def at(path):
        node = schema
        for part in path:
            if not isinstance(node, dict):
                return None
            if part == "*":
                node = node.get("items") if isinstance(node.get("items"), dict) else node.get("additionalProperties")
            else:
                node = (node.get("properties") or {}).get(part)
        return node
    return at


def _trainer_tables(release: str):
    """(label, trie, schema node at a path) of the Trainer/JobSet rule tables of a release; their schemas are
    the project's generated ones (the tables hold only the rules)."""
    reg = registry(K8S, release)
    for av, kinds in R.load(release)["kinds"].items():
        for kind, rules in kinds.items():
            if not any("cel" in r for r in rules):
                continue
            ks = reg.get(av, kind)

            def at(path, ks=ks):
                node = ks.resolve(ks.schema)
                for part in path:
                    if not isinstance(node, dict):
                        return None
                    if part == "*":
                        node = node.get("items") if isinstance(node.get("items"), dict) else node.get("additionalProperties")
                    else:
                        node = (node.get("properties") or {}).get(part)
                    node = ks.resolve(node)
                return node
            yield f"trainer-{release} {av} {kind}", R.trie(rules), at


def _tables(set_name: str):
    if set_name.startswith("trainer-"):
        return list(_trainer_tables(set_name.split("-", 1)[1]))
    return list(_raw_crd_tables(set_name))


SETS = [*crd_sets.SETS, *(f"trainer-{r}" for r in versions.TRAINER_RELEASES)]


def _rules(trie) -> list[dict]:
    out, todo = [], [trie] if trie is not None else []
    while todo:
        node = todo.pop()
        todo.extend(node.children.values())
        out.extend(r for r in node.rules if "cel" in r)
    return out


def _position(path, at) -> str:
    if not path:
        return "root"
    if path[-1] != "*":
        return "field"
    parent = at(tuple(path[:-1])) or {}
    return "list item" if isinstance(parent.get("items"), dict) else "map value"


# Instances --------------------------------------------------------------------------------------------------

def _type(node) -> str | None:
    if not isinstance(node, dict):
        return None
    t = node.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), None)
    if t is None and isinstance(node.get("properties"), dict):
        return "object"
    if node.get("x-kubernetes-int-or-string"):
        return "integer"
    return t


def fill(node, depth: int = 0):
    """A value of a schema node with every property set, two items per list, one value per map (enums:
    their first value; strings "a"; numbers their minimum or 1), down to a depth."""
    t = _type(node)
    if depth > 7 or t is None:
        return {}
    if "enum" in node and node["enum"]:
        return node["enum"][0]
    if t == "object":
        props = node.get("properties") if isinstance(node.get("properties"), dict) else {}
        out = {k: fill(v, depth + 1) for k, v in props.items() if _type(v) is not None}
        if isinstance(node.get("additionalProperties"), dict) and not props:
            out["key"] = fill(node["additionalProperties"], depth + 1)
        return out
    if t == "array":
        items = node.get("items") if isinstance(node.get("items"), dict) else {}
        if _type(items) == "object" and node.get("x-kubernetes-list-type") == "map":
            keys = node.get("x-kubernetes-list-map-keys") or []
            a, b = fill(items, depth + 1), fill(items, depth + 1)
            for k in keys:
                b[k] = "b" if isinstance(b.get(k), str) else 2
            return [a, b]
        if node.get("x-kubernetes-list-type") == "set" and _type(items) in ("string", "integer"):
            return ["a", "b"] if _type(items) == "string" else [1, 2]
        return [fill(items, depth + 1), fill(items, depth + 1)]
    if t == "string":
        return "a"
    if t in ("integer", "number"):
        return max(1, int(node.get("minimum", 1)))
    if t == "boolean":
        return True
    return {}


def reach(paths, at) -> dict:
    """An object in which every path of `paths` names at least one value (a `*` of a list: an item; of a map:
    the key "key"), each value filled from its schema node."""
    root: dict = {}
    for path in paths:
        node, parent, key = root, None, None
        for i, part in enumerate(path):
            container = at(tuple(path[:i]))
            if part == "*":
                if isinstance((container or {}).get("items"), dict):
                    if not isinstance(node, list):
                        node = [] if not node else node
                        if parent is not None:
                            parent[key] = node
                    if not node:
                        node.append({})
                    parent, key = node, 0
                else:
                    parent, key = node, "key"
            else:
                parent, key = node, part
            child = parent[key] if (isinstance(parent, list) or key in parent) else None
            if child is None or child == {}:
                sub = at(tuple(path[:i + 1]))
                t = _type(sub)
                child = [] if t == "array" else ({} if t in ("object", None) else fill(sub))
                if i == len(path) - 1 and t not in ("array", "object"):
                    child = fill(sub)
                parent[key] = child
            node = child
    return root


def _concrete(path, data) -> list[tuple]:
    """Every concrete path (indexes, keys) a rule path with `*` names in `data`."""
    out = [((), data)]
    for part in path:
        nxt = []
        for p, v in out:
            if part == "*":
                if isinstance(v, list):
                    nxt += [(p + (i,), x) for i, x in enumerate(v)]
                elif isinstance(v, dict):
                    nxt += [(p + (k,), x) for k, x in v.items()]
            elif isinstance(v, dict) and part in v:
                nxt.append((p + (part,), v[part]))
        out = nxt
    return [p for p, v in out if v is not None]


# Per set: every rule visited at its place, at every depth ---------------------------------------------------

@pytest.mark.parametrize("set_name", SETS)
def test_every_rule_of_the_set_is_evaluated_at_every_value_its_path_names(set_name, monkeypatch):
    tables = _tables(set_name)
    counts: collections.Counter = collections.Counter()
    for label, trie, at in tables:
        rules = _rules(trie)
        if not rules:
            continue
        data = reach([r["path"] for r in rules], at)
        expected = collections.Counter()
        for r in rules:
            counts[(_position(r["path"], at), len(r["path"]))] += 1
            for p in _concrete(r["path"], data):
                expected[(r["cel"], p)] += 1
            assert _concrete(r["path"], data), (label, r["path"])
        # every rule the engine evaluates is made to fail: what violations_of yields is where it evaluated what
        monkeypatch.setattr(R, "_cel", lambda rule, value: (False, "", ""))
        seen = collections.Counter((m[m.index("(CEL rule `") + 11:-2], tuple(p))
                                   for p, m, how in R.violations_of(trie, data, lenient=True) if how == "cel")
        monkeypatch.undo()
        assert seen == expected, label
    total = sum(counts.values())
    # What each set holds (a new release moving a rule to a new kind of place shows up here):
    expected_positions = {
        "kueue-v0.19.2": {"root", "field", "list item"},
        "trainer-2.1": {"root", "field"},
        "trainer-2.3": {"root", "field", "list item"},
    }.get(set_name, set())
    assert {pos for pos, _ in counts} == expected_positions, sorted(counts.items())
    if expected_positions:
        assert total >= 10 and max(depth for _, depth in counts) >= 3, sorted(counts.items())


# Per set: the cache's projection gives every rule the verdict of the whole value ----------------------------

def _outcome(rule: str, value):
    try:
        return ("value", R._program(rule).execute({"self": value}) is True)
    except Exception as exc:
        return ("error", type(exc).__name__)


@pytest.mark.parametrize("set_name", SETS)
def test_every_rule_of_the_set_reads_on_the_cached_projection_what_it_reads_on_the_whole(set_name):
    checked = 0
    for label, trie, at in _tables(set_name):
        for r in _rules(trie):
            value = fill(at(tuple(r["path"])))
            variants = [value]
            if isinstance(value, dict):
                # each field left out in turn: has() and the absence of a field read the same on both
                variants += [{k: v for k, v in value.items() if k != drop} for drop in value]
            for v in variants:
                whole = _outcome(r["cel"], v)
                projected = _outcome(r["cel"], R._project(v, R._chains(r["cel"])))
                assert projected == whole, (label, r["path"], r["cel"], v)
                checked += 1
    if set_name in ("kueue-v0.19.2", "trainer-2.1", "trainer-2.3"):
        assert checked >= 20


def test_a_projection_never_changes_the_value_it_reads():
    # a chain read whole (`self.status`) beside a longer one a macro reads items of (`self.status.conditions`)
    rule = ("has(self.status) && self.status.conditions.exists(c, c.type == 'Q') ? size(self.status.x) == 1 "
            ": self.list[0].b == 1 && self.list.all(x, x.a)")
    value = {"status": {"conditions": [{"type": "R", "z": 1}], "x": [1]}, "list": [{"a": True, "b": 1}]}
    before = json.dumps(value, sort_keys=True)
    assert R._program(rule).execute({"self": R._project(value, R._chains(rule))}) is True
    assert json.dumps(value, sort_keys=True) == before


# Positions a committed set does not have: a CRD written here with a rule at each ---------------------------

POSITIONS_CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: probes.example.com}
spec:
  group: example.com
  names: {kind: Probe, plural: probes}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-validations: [{rule: "!has(self.spec) || !has(self.spec.size) || self.spec.size != 13", message: root}]
        properties:
          spec:
            type: object
            x-kubernetes-validations: [{rule: "!has(self.size) || self.size != 7", message: field}]
            properties:
              size: {type: integer}
              deep:
                type: object
                properties:
                  deeper:
                    type: object
                    properties:
                      leaf: {type: string, x-kubernetes-validations: [{rule: "self != 'bad'", message: depth 4}]}
              list:
                type: array
                x-kubernetes-validations: [{rule: "size(self) < 3", message: the list}]
                items:
                  type: object
                  x-kubernetes-validations: [{rule: "self.count <= self.max", message: list item}]
                  properties:
                    count: {type: integer}
                    max: {type: integer}
                    grid:
                      type: array
                      items:
                        type: array
                        items: {type: integer, x-kubernetes-validations: [{rule: "self >= 0", message: item of item}]}
              map:
                type: object
                x-kubernetes-validations: [{rule: "!('forbidden' in self)", message: the map}]
                additionalProperties:
                  type: object
                  x-kubernetes-validations: [{rule: "self.used <= self.quota", message: map value}]
                  properties:
                    used: {type: integer}
                    quota: {type: integer}
                    labels:
                      type: object
                      additionalProperties: {type: string, x-kubernetes-validations: [{rule: "self != ''", message: value of a map value}]}
"""


def _validate(text: str, crds: tuple = (), **kw) -> list[tuple[str, str]]:
    docs, problems = load_stream(text, "o.yaml")
    assert problems == []
    return [(f.path, f.message) for f in validate_documents(docs, crds=crds, **kw)]


@pytest.mark.parametrize("spec,path,message", [
    ("{size: 13}", "", "root"),
    ("{size: 7}", "spec", "field"),
    ("{deep: {deeper: {leaf: bad}}}", "spec.deep.deeper.leaf", "depth 4"),
    ("{list: [{count: 1, max: 1}, {count: 1, max: 1}, {count: 1, max: 1}]}", "spec.list", "the list"),
    ("{list: [{count: 1, max: 2}, {count: 3, max: 2}]}", "spec.list[1]", "list item"),
    ("{list: [{count: 0, max: 0, grid: [[1], [2, -1]]}]}", "spec.list[0].grid[1][1]", "item of item"),
    ("{map: {forbidden: {used: 0, quota: 0}}}", "spec.map", "the map"),
    ("{map: {a: {used: 1, quota: 2}, b: {used: 3, quota: 2}}}", "spec.map.b", "map value"),
    ("{map: {a: {used: 0, quota: 0, labels: {x: ok, z: ''}}}}", "spec.map.a.labels.z", "value of a map value"),
])
def test_a_rule_is_evaluated_at_each_position(tmp_path, spec, path, message):
    crd = tmp_path / "probe.yaml"
    crd.write_text(POSITIONS_CRD)
    got = _validate(f"apiVersion: example.com/v1\nkind: Probe\nmetadata: {{name: p}}\nspec: {spec}\n", (str(crd),))
    assert [(p, m.split(" (CEL rule")[0]) for p, m in got] == [(path, message)]


# Kueue v0.19.2: an object breaking each rule whose message it can trigger -----------------------------------
# (kubernetes-sigs/kueue v0.19.2 config/components/crd/bases; the rules comparing with oldSelf judge updates
# only, and the Workload's root rule reads `status`, which a created object never carries: the API server
# drops it on create, the CRD having a status subresource.)

CQ = "apiVersion: kueue.x-k8s.io/{v}\nkind: ClusterQueue\nmetadata: {{name: cq}}\nspec:\n"
GROUP = ("  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n    - name: default\n      resources:\n"
         "      - {name: cpu, nominalQuota: 9}\n")
KUEUE_CASES = [
    ("the issue's ClusterQueue: a flavor with more resources than coveredResources",
     CQ.format(v="v1beta2") + GROUP + "      - {name: memory, nominalQuota: 36Gi}\n",
     "spec.resourceGroups[0]", "flavors must have the same number of resources as the coveredResources"),
    ("the same in v1beta1", CQ.format(v="v1beta1") + GROUP + "      - {name: memory, nominalQuota: 36Gi}\n",
     "spec.resourceGroups[0]", "flavors must have the same number of resources as the coveredResources"),
    ("a Cohort's resource group", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: c}\nspec:\n"
     + GROUP.replace("[cpu]", "[cpu, memory]"),
     "spec.resourceGroups[0]", "flavors must have the same number of resources as the coveredResources"),
    ("borrowingLimit without a cohort", CQ.format(v="v1beta2") + GROUP.replace("nominalQuota: 9", "nominalQuota: 9, borrowingLimit: 1"),
     "spec", "borrowingLimit must be nil when cohort is empty"),
    ("preemption", CQ.format(v="v1beta2") + "  preemption: {reclaimWithinCohort: Never, borrowWithinCohort: {policy: LowerPriority}}\n",
     "spec.preemption", "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"),
    ("flavor fungibility (whenCanBorrow defaulted to MayStopSearch)",
     CQ.format(v="v1beta2") + "  flavorFungibility: {preference: BorrowingOverPreemption}\n",
     "spec.flavorFungibility", "preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor"),
    ("a MultiKueueCluster with both sources", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: MultiKueueCluster\nmetadata: {name: m}\n"
     "spec:\n  clusterSource: {kubeConfig: {location: s}, clusterProfileRef: {name: p}}\n",
     "spec.clusterSource", "exactly one of the fields in [kubeConfig clusterProfileRef] must be set"),
    ("a MultiKueueConfig naming a cluster twice", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: MultiKueueConfig\nmetadata: {name: m}\n"
     "spec:\n  clusters: [a, b, a]\n", "spec.clusters", "must be unique"),
    ("a ResourceFlavor with a topology and no node labels", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\n"
     "metadata: {name: f}\nspec:\n  topologyName: t\n  nodeLabels: {}\n",
     "spec", "at least one nodeLabel is required when topology is set"),
    ("a ResourceFlavor toleration without key", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f}\n"
     "spec:\n  tolerations: [{operator: Equal, value: v}]\n", "spec.tolerations",
     "operator must be Exists when 'key' is empty, which means 'match all values and all keys'"),
    ("a ResourceFlavor toleration with seconds", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f}\n"
     "spec:\n  tolerations: [{key: k, effect: NoSchedule, tolerationSeconds: 5}]\n", "spec.tolerations",
     "effect must be 'NoExecute' when 'tolerationSeconds' is set"),
    ("a ResourceFlavor toleration operator", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f}\n"
     "spec:\n  tolerations: [{key: k, operator: Maybe}]\n", "spec.tolerations",
     "supported toleration values: 'Equal'(default), 'Exists'"),
    ("a ResourceFlavor toleration Exists with a value", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\n"
     "metadata: {name: f}\nspec:\n  tolerations: [{key: k, operator: Exists, value: v}]\n", "spec.tolerations",
     "a value must be empty when 'operator' is 'Exists'"),
    ("a ResourceFlavor toleration effect", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f}\n"
     "spec:\n  tolerations: [{key: k, effect: Sometimes}]\n", "spec.tolerations",
     "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'"),
    ("a ResourceFlavor taint effect", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f}\n"
     "spec:\n  nodeTaints: [{key: k, effect: Sometimes}]\n", "spec.nodeTaints",
     "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'"),
    ("a Topology level twice", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Topology\nmetadata: {name: t}\nspec:\n"
     "  levels: [{nodeLabel: rack}, {nodeLabel: rack}]\n", "spec.levels", "must be unique"),
    ("a Topology with the hostname level above another", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Topology\n"
     "metadata: {name: t}\nspec:\n  levels: [{nodeLabel: kubernetes.io/hostname}, {nodeLabel: rack}]\n", "spec.levels",
     "the kubernetes.io/hostname label can only be used at the lowest level of topology"),
    ("a Workload pod set with minCount above count", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\n"
     "metadata: {name: w, namespace: team}\nspec:\n  podSets:\n  - {name: main, count: 1, minCount: 2, template: "
     "{spec: {containers: [{name: c, image: i}]}}}\n", "spec.podSets[0]", "minCount should be positive and less or equal to count"),
    ("a Workload with a priority class and no priority", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\n"
     "metadata: {name: w, namespace: team}\nspec:\n  priorityClassRef: {group: scheduling.k8s.io, kind: PriorityClass, name: p}\n",
     "spec", "priority should not be nil when priorityClassRef is set"),
    ("a Workload priority class of the wrong kind", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\n"
     "metadata: {name: w, namespace: team}\nspec:\n  priority: 1\n  priorityClassRef: {group: scheduling.k8s.io, kind: WorkloadPriorityClass, name: p}\n",
     "spec.priorityClassRef", "only the PriorityClass kind is allowed for the scheduling.k8s.io group"),
    ("a Workload priority class of the other wrong kind", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\n"
     "metadata: {name: w, namespace: team}\nspec:\n  priority: 1\n  priorityClassRef: {group: kueue.x-k8s.io, kind: PriorityClass, name: p}\n",
     "spec.priorityClassRef", "only the WorkloadPriorityClass kind is allowed for the kueue.x-k8s.io group"),
]


@pytest.mark.parametrize("text,path,message", [c[1:] for c in KUEUE_CASES], ids=[c[0] for c in KUEUE_CASES])
def test_kueue_refuses_what_each_of_its_rules_refuses(text, path, message):
    got = _validate(text)
    assert [(p, m.split(" (CEL rule")[0]) for p, m in got] == [(path, message)], got


def test_every_kueue_rule_a_created_object_can_break_has_a_case():
    """The cases above cover every distinct rule of Kueue's v1beta2 kinds but the one reading `status`."""
    covered = {c[3] for c in KUEUE_CASES}
    rules = set()
    for label, trie, _ in _raw_crd_tables("kueue-v0.19.2"):
        if "/v1beta2 " in label:
            rules |= {r["message"] for r in _rules(trie) if r["path"] != [] or "status" not in r["cel"]}
    assert rules - covered == set() and len(rules) >= 15


def test_an_evaluation_error_is_the_api_servers_refusal_too(tmp_path):
    """`no such key` (apiextensions-apiserver v0.36.3 pkg/apiserver/schema/cel/validation.go: "%v evaluating
    rule: %v"): ResourceFlavor's `self.nodeLabels.size()` on a flavor with a topology and no nodeLabels."""
    got = _validate("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f}\n"
                    "spec:\n  topologyName: t\n")
    assert [(p, m.split(" (CEL rule")[0]) for p, m in got] == [
        ("spec", "no such key: nodeLabels evaluating rule: at least one nodeLabel is required when topology is set")]


@pytest.mark.parametrize("text", [
    CQ.format(v="v1beta2") + GROUP,
    CQ.format(v="v1beta2") + GROUP.replace("[cpu]", "[cpu, memory]") + "      - {name: memory, nominalQuota: 36Gi}\n",
    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f}\nspec:\n  topologyName: t\n"
    "  nodeLabels: {pool: a}\n  tolerations: [{operator: Exists}, {key: k, operator: Equal, value: v, effect: NoExecute, "
    "tolerationSeconds: 3}]\n",
    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Topology\nmetadata: {name: t}\nspec:\n"
    "  levels: [{nodeLabel: rack}, {nodeLabel: kubernetes.io/hostname}]\n",
])
def test_kueue_objects_that_keep_the_rules_pass(text):
    assert _validate(text) == []
