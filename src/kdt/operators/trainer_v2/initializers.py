"""Trainer's initializer images (kubeflow/trainer v2.3.0 pkg/initializers): which `storageUri` each reads, how it
parses it, where it writes, and the env its Secret gives it. Paths below are relative to that repository.

- dataset/__main__.py and model/__main__.py pick the provider by `urlparse(STORAGE_URI).scheme`: the dataset
  initializer knows hf, cache and s3, the model initializer hf and s3 (utils/utils.py HF_SCHEME, CACHE_SCHEME,
  S3_SCHEME); any other scheme (pvc://, gs://, https://, a bare name) ends the pod with "STORAGE_URI must have
  the valid ... provider" after the TrainJob was accepted: nothing checks it before the pod runs.
- dataset/huggingface.py: repo_id = netloc + "/" + path.split("/")[1]: `hf://org/name`; `hf://name` (no
  repository path) raises IndexError in the pod (kubeflow/sdk#563: accepted, then failing at download), and
  segments past the second are dropped without a word.
- model/huggingface.py: repo_id = netloc + path: `hf://org/name` or `hf://name`; a third segment or a trailing
  `/` is no Hugging Face repository id (huggingface_hub validate_repo_id) and fails at download.
- dataset/s3.py, model/s3.py: bucket = netloc, prefix = path without its leading `/`: `s3://bucket/prefix`
  (an empty bucket fails at download; an empty prefix downloads the whole bucket).
- dataset/cache.py: `cache://<schema>/<table>` (parts[1]: IndexError without the table).
- utils/utils.py: the downloads land in /workspace/dataset (DATASET_PATH) and /workspace/model (MODEL_PATH)
  of the initializer's container; types/types.py: the config is read from env named as the dataclass fields
  in upper case, which a `secretRef` (envFrom, builder.go Initializer) provides: ACCESS_TOKEN for hf,
  ACCESS_KEY_ID and SECRET_ACCESS_KEY (ENDPOINT, REGION, ROLE_ARN) for s3.
"""
from __future__ import annotations

import posixpath
from urllib.parse import urlparse

from .facts import DATASET_INITIALIZER, MODEL_INITIALIZER

SOURCE = "kubeflow/trainer v2.3.0 pkg/initializers"
STORAGE_URI_ENV = "STORAGE_URI"
WORKSPACE = "/workspace"
OUTPUT = {DATASET_INITIALIZER: "/workspace/dataset", MODEL_INITIALIZER: "/workspace/model"}
FIELD = {DATASET_INITIALIZER: "dataset", MODEL_INITIALIZER: "model"}
SCHEMES = {DATASET_INITIALIZER: ("hf", "s3", "cache"), MODEL_INITIALIZER: ("hf", "s3")}
SHAPES = {"hf": "hf://<org>/<name>", "s3": "s3://<bucket>/<prefix>", "cache": "cache://<schema>/<table>"}
SECRET_KEYS = {"hf": ("ACCESS_TOKEN",), "s3": ("ACCESS_KEY_ID", "SECRET_ACCESS_KEY")}


def uri_problems(job: str, uri: str) -> list[tuple[str, bool]]:
    """(message, is an error) for `uri` as the `job` initializer (dataset-initializer, model-initializer) reads it."""
    parsed = urlparse(uri)
    scheme = parsed.scheme
    if scheme not in SCHEMES[job]:
        known = ", ".join(f"{s}:// ({SHAPES[s]})" for s in SCHEMES[job])
        got = f"scheme {scheme}://" if scheme else "no scheme"
        return [(f"storageUri {uri!r} has {got}: Trainer's {job} (v2.3.0) reads only {known}; the pod fails "
                 f"(\"STORAGE_URI must have the valid {FIELD[job]} provider\") after the TrainJob is accepted", True)]
    segments = parsed.path.split("/")[1:] if parsed.path else []
    if scheme == "hf":
        return _hf(job, uri, parsed.netloc, segments)
    if scheme == "s3":
        if not parsed.netloc:
            return [(f"storageUri {uri!r} names no bucket: expected {SHAPES['s3']} (the download fails)", True)]
        return []
    if not parsed.netloc or len(segments) < 1 or not segments[0]:
        return [(f"storageUri {uri!r}: expected {SHAPES['cache']} (dataset/cache.py reads the table from the second "
                 "part: IndexError in the pod)", True)]
    return []


def _hf(job: str, uri: str, org: str, segments: list[str]) -> list[tuple[str, bool]]:
    if not org:
        return [(f"storageUri {uri!r} names no repository: expected {SHAPES['hf']}", True)]
    if job == DATASET_INITIALIZER:
        if not segments or not segments[0]:
            return [(f"storageUri {uri!r} has no repository path: expected {SHAPES['hf']} (dataset/huggingface.py "
                     "reads path.split('/')[1]: IndexError in the pod, after the TrainJob is accepted; "
                     "kubeflow/sdk#563)", True)]
        if len(segments) > 1:
            return [(f"storageUri {uri!r}: the dataset initializer downloads the whole repository {org}/{segments[0]} "
                     f"and drops {'/'.join(segments[1:])!r} without a word", False)]
        return []
    if len(segments) > 1 or (segments and not segments[0]):
        return [(f"storageUri {uri!r}: {org}{'/' + '/'.join(segments)} is no Hugging Face repository id (the model "
                 f"initializer uses netloc + path as repo_id: {SHAPES['hf']} or hf://<name>); the download fails", True)]
    return []


def scheme_of(uri: str) -> str:
    return urlparse(uri).scheme


def seen_at(volume_path: str, mount: dict) -> str | None:
    """Where a container's `mount` shows the volume's `volume_path` (relative to the volume's root), or None."""
    sub = posixpath.normpath(str(mount.get("subPath") or ".")).lstrip("./") if mount.get("subPath") else ""
    rel = posixpath.normpath(volume_path).lstrip("/") if volume_path not in ("", ".") else ""
    if sub and not (rel == sub or rel.startswith(sub + "/")):
        return None
    rest = rel[len(sub):].lstrip("/") if sub else rel
    return posixpath.join(str(mount.get("mountPath")), rest) if rest else str(mount.get("mountPath"))


def written_to(job: str, mounts: list[dict]) -> tuple[str, str] | None:
    """(volume name, path inside the volume) where the `job` initializer's download lands, through the container's
    `mounts`; None when no mount holds its output (the download stays in the container and is lost)."""
    out = OUTPUT[job]
    best = None
    for m in mounts:
        path = str(m.get("mountPath") or "").rstrip("/") or "/"
        if out == path or out.startswith(path.rstrip("/") + "/"):
            if best is None or len(path) > len(str(best.get("mountPath"))):
                best = m
    if best is None:
        return None
    rest = out[len(str(best["mountPath"]).rstrip("/")):].lstrip("/")
    sub = str(best.get("subPath") or "").strip("/")
    return str(best.get("name")), posixpath.join(sub, rest) if sub else rest
