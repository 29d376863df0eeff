"""Targets in any layout (#12): kustomizations, Components, charts and loose YAML, walked or named."""
from __future__ import annotations

from pathlib import Path

from kdt import targets as T

ROOT = Path(__file__).resolve().parents[2]


def _names(ts):
    return sorted((t.kind, t.name) for t in ts)


def test_a_file_means_what_it_belongs_to():
    got = _names(T.from_args([str(ROOT / p) for p in (
        "overlays/ddp/mnist.yaml",                  # a patch of an overlay: the overlay's output
        "charts/trainer/templates/trainjob.yaml",   # a chart template: the chart
        "charts/trainer/ci/ddp.yaml",               # a values file: the chart with it
        "components/t5-fsdp/runtime.yaml",          # a Component's resource: the file
        "components/trainer-2.1/overrides.yaml",    # a Component's patch: through the overlays using it
    )]))
    # a chart template means the chart with its first values file (ci/ddp-git.yaml sorts before ci/ddp.yaml)
    assert got == [("file", "components/t5-fsdp/runtime.yaml"), ("helm", "charts/trainer/ci/ddp-git.yaml"),
                   ("helm", "charts/trainer/ci/ddp.yaml"), ("kustomize", "overlays/ddp")]


def test_a_walked_folder_renders_kustomizations_and_charts_and_reads_the_rest(validate_cli):
    ts = T.from_args([str(ROOT / "components"), str(ROOT / "deploy"), str(ROOT / "base")])
    kinds = {t.kind for t in ts}
    assert ("kustomize", "deploy/argocd") in _names(ts) and ("kustomize", "base") in _names(ts)
    assert kinds == {"kustomize", "file"} and not any("overrides.yaml" in t.name for t in ts)
    # The workflows of .github are no manifests: skipped and counted in a walk (#27) ...
    code, out, err = validate_cli("components", "deploy", "base", ".github")
    assert (code, err) == (0, ""), out
    assert "file(s) skipped: no Kubernetes object in them" in out
    # ... but a file named explicitly must be one (kubeconform, kubectl: "Object 'Kind' is missing").
    code, out, err = validate_cli(".pre-commit-hooks.yaml", "action.yml")
    assert code == 1 and ".pre-commit-hooks.yaml:" in out and "action.yml:" in out and "missing 'kind' key" in out


def test_a_folder_of_patch_only_components_says_so_and_an_empty_one_says_it_is_empty(tmp_path):
    import pytest
    from kdt.errors import UsageError
    with pytest.raises(UsageError, match="only kustomize Components that patch .*check the overlays that use them"):
        T.from_args([str(ROOT / "components" / "spread")])
    with pytest.raises(UsageError, match="no YAML files, kustomization or chart in this folder"):
        T.from_args([str(tmp_path)])


def test_a_named_file_beside_a_kustomization_is_read_as_itself_unless_the_kustomization_patches_with_it(tmp_path):
    # An example folder of another repository: a kustomization for some files, and a Job it does not name (#34).
    (tmp_path / "kustomization.yaml").write_text(
        "resources: [deploy.yaml]\npatches: [{path: patch.yaml}]\npatchesStrategicMerge: [smp.yaml]\n"
        "configMapGenerator: [{name: c, files: [conf=settings.yaml]}]\n")
    for name in ("deploy.yaml", "patch.yaml", "smp.yaml", "settings.yaml", "job.yaml"):
        (tmp_path / name).write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    got = {Path(t.path).name if t.kind == T.FILE else "<kustomization>": t.kind
           for name in ("deploy.yaml", "job.yaml", "patch.yaml", "smp.yaml", "settings.yaml")
           for t in T.from_args([str(tmp_path / name)])}
    assert got == {"deploy.yaml": T.FILE, "job.yaml": T.FILE, "<kustomization>": T.KUSTOMIZE}
    for name in ("patch.yaml", "smp.yaml", "settings.yaml"):
        (t,) = T.from_args([str(tmp_path / name)])
        assert (t.kind, Path(t.path).resolve()) == (T.KUSTOMIZE, tmp_path.resolve()), name
