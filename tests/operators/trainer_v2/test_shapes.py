"""The table of the TrainJob's shapes (kdt.operators.trainer_v2.shapes): every release finds its row, every
release of TRAINER has its JobSet, and the stages that name a shape read it from the table."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kdt import migration, versions
from kdt.operators.jobset import facts as JS
from kdt.operators.trainer_v2 import shapes as SH

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("release, key, label", [
    ("2.0", "2.1", "2.1"), ("2.1", "2.1", "2.1"), ("v2.1.0", "2.1", "2.1"),
    ("2.2", "2.3", "2.2+"), ("2.3.0", "2.3", "2.2+"), ("2.2+", "2.3", "2.2+"), ("2.9", "2.3", "2.2+")])
def test_a_release_is_checked_as_its_shapes_release(release, key, label):
    assert SH.of(release).key == key and SH.of(release).label == label and SH.checked_as(release) == key


def test_every_shape_is_checked_as_a_release_of_trainer_and_rows_are_in_release_order():
    assert all(s.key in versions.TRAINER for s in SH.SHAPES)
    assert all(SH.checked_as(r) in versions.TRAINER for r in versions.TRAINER_RELEASES)
    assert [s.first for s in SH.SHAPES] == sorted(s.first for s in SH.SHAPES)
    assert len({s.pod_changes for s in SH.SHAPES}) == len(SH.SHAPES)


def test_a_trainjob_is_in_the_shape_whose_own_fields_it_uses():
    assert SH.of_trainjob({"runtimePatches": []}).key == "2.3"
    assert SH.of_trainjob({"activeDeadlineSeconds": 5}).key == "2.3"
    assert SH.of_trainjob({"podTemplateOverrides": []}).key == "2.1"
    assert SH.of_trainjob({"labels": {}}).key == "2.1"
    assert SH.of_trainjob({"trainer": {}}) is None


def test_every_trainer_release_has_its_jobset_and_a_missing_row_is_an_error(monkeypatch):
    assert set(versions.JOBSET) == set(versions.TRAINER_RELEASES)
    assert JS.release_for_trainer("2.1").name == "v0.10.1" and JS.release_for_trainer("2.3.0").name == "v0.12.0"
    monkeypatch.setattr(versions, "JOBSET", {"2.3": "v0.12.0"})
    with pytest.raises(KeyError, match="Trainer 2.1: no JobSet release"):
        JS.release_for_trainer("2.1")       # never the default release's JobSet


def test_the_migration_and_the_chart_name_the_shapes_by_the_tables_labels():
    assert migration.LABELS == {"2.1": "2.1", "2.3": "2.2+"}
    schema = json.loads((ROOT / "charts" / "trainer" / "values.schema.json").read_text())
    enum = schema["properties"]["trainJob"]["properties"]["trainerVersion"]["enum"]
    assert sorted(enum) == sorted(s.label for s in SH.SHAPES)
