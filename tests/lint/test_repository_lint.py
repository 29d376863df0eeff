"""Lint precision and speed on whole repositories (#27): kustomize-patch-target decided by rendering with and
without the patch, a kustomization that does not render gets its render error only, every target rendered
once and in parallel. Fixtures are scratch kustomizations written here, in tmp_path."""
from __future__ import annotations

import textwrap
import time
from pathlib import Path

from kdt import render as R
from kdt import targets as T
from kdt.lint import lint_target

BASE = {
    "base/kustomization.yaml": """\
        resources: [deploy.yaml]
        configMapGenerator:
        - name: env
          literals: [MODE=train]
        """,
    "base/deploy.yaml": """\
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: trainer, labels: {app: t}}
        spec:
          selector: {matchLabels: {app: t}}
          template:
            metadata: {labels: {app: t}}
            spec:
              containers: [{name: c, image: "i:1"}]
        """,
}


def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))


def _patch_findings(folder: Path) -> list[tuple[str, str]]:
    found = lint_target(T.Target(str(folder), T.KUSTOMIZE, folder), docs=[])
    return [(f.path, f.message) for f in found if f.rule == "kustomize-patch-target"]


def test_a_patch_whose_render_changes_is_no_error_one_whose_render_does_not_is(tmp_path):
    _tree(tmp_path, {**BASE, "overlay/kustomization.yaml": """\
        resources: [../base]
        patches:
        # The generated ConfigMap is no resource file of the tree (reading the files finds no match), but
        # kustomize patches it: the render changes, so this is right.
        - target: {kind: ConfigMap, name: env}
          patch: '[{"op": "add", "path": "/data/EXTRA", "value": "1"}]'
        # A typo in the name: kustomize patches nothing and says nothing.
        - target: {kind: Deployment, name: trainr}
          patch: '[{"op": "add", "path": "/spec/replicas", "value": 2}]'
        """})
    got = _patch_findings(tmp_path / "overlay")
    assert got == [("patches[1].target", "patch target kind=Deployment, name=trainr matches no resource of this "
                                         "kustomization: it renders the same without this patch")]
    # The tree is left as it was (the render without the patch happens in a shadow of it).
    assert "name: trainr" in (tmp_path / "overlay" / "kustomization.yaml").read_text()


def test_a_components_patch_is_rendered_through_the_kustomization_that_includes_it(tmp_path):
    _tree(tmp_path, {**BASE,
                     "comp/kustomization.yaml": """\
                         apiVersion: kustomize.config.k8s.io/v1alpha1
                         kind: Component
                         patches:
                         - target: {kind: ConfigMap, name: env}
                           patch: '[{"op": "add", "path": "/data/FROM_COMPONENT", "value": "1"}]'
                         - target: {kind: Service}
                           patch: '[{"op": "add", "path": "/metadata/labels", "value": {}}]'
                         """,
                     "overlay/kustomization.yaml": "resources: [../base]\ncomponents: [../comp]\n"})
    got = _patch_findings(tmp_path / "overlay")
    assert [p for p, _ in got] == ["patches[1].target"] and "kind=Service" in got[0][1]


def test_a_kustomization_that_does_not_render_gets_its_render_error_and_nothing_else(tmp_path, lint_cli):
    _tree(tmp_path, {"broken/kustomization.yaml": """\
        resources: [missing.yaml]
        patches:
        - target: {kind: Deployment, name: nothing}
          patch: '[{"op": "add", "path": "/spec/replicas", "value": 2}]'
        """})
    code, out, _ = lint_cli(tmp_path / "broken")
    assert code == 2
    assert [line.split(" [")[1].split("]")[0] for line in out.splitlines() if " error [" in line] == ["render"]


def test_every_target_renders_once_whatever_names_it_and_in_parallel(tmp_path, monkeypatch):
    _tree(tmp_path, {**BASE, "overlay/kustomization.yaml": "resources: [../base]\n"})
    (tmp_path / "also").symlink_to("overlay")
    calls = []
    real_run = R._run

    def counting(cmd, target, cwd=None):
        calls.append(Path(cmd[-1]).resolve())
        return real_run(cmd, target, cwd)
    monkeypatch.setattr(R, "_run", counting)
    monkeypatch.setattr(R, "_cache", {})
    real_render = R.render

    def late_first(target, *a):       # the first-given target's thread starts last: it still owns the render
        if target.name == "overlay":
            time.sleep(0.3)
        return real_render(target, *a)
    monkeypatch.setattr(R, "render", late_first)
    ts = [T.Target("overlay", T.KUSTOMIZE, tmp_path / "overlay"), T.Target("base", T.KUSTOMIZE, tmp_path / "base"),
          T.Target("also", T.KUSTOMIZE, tmp_path / "also"), T.Target("overlay", T.KUSTOMIZE, tmp_path / "overlay")]
    got = R.render_all(ts, jobs=4)
    assert sorted(calls) == sorted([(tmp_path / "overlay").resolve(), (tmp_path / "base").resolve()])
    assert [r.target.name for r in got] == ["overlay", "base", "overlay", "overlay"]      # in the order given
    assert got[0] is got[2] is got[3] and got[0].ok and {d.kind for d in got[0].documents} == {"Deployment", "ConfigMap"}
