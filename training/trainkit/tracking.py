"""MLflow tracking when ``MLFLOW_TRACKING_URI`` is set; nothing (not even the import) otherwise.

Rank 0 only. The run's id is kept in ``<output-dir>/mlflow_run_id``, so that a restarted job logs into
the same MLflow run instead of opening a new one. A tracking server that is down or refuses a call
costs a ``[WARN]`` line and the tracking, never the training.

``MLFLOW_TRACKING_URI`` may be a server (``http://...``), a database (``sqlite:///...``) or a folder
(``file:/path`` or a plain ``/path``, as seed 003 writes it). MLflow 3 keeps its folder store in
maintenance mode behind ``MLFLOW_ALLOW_FILE_STORE``: naming a folder is that choice, so it is set for
this process (unless the environment sets it).
"""
from __future__ import annotations

import os
from pathlib import Path

from .checkpoint import atomic_write
from .log import log

URI_ENV = "MLFLOW_TRACKING_URI"
EXPERIMENT_ENV = "MLFLOW_EXPERIMENT_NAME"
DEFAULT_EXPERIMENT = "torch-k8s"


def is_folder_uri(uri: str) -> bool:
    return uri.startswith("file:") or uri.startswith("/") or uri.startswith(".")


class Tracker:
    def __init__(self, *, rank: int, run_name: str, output_dir: str | None, params: dict):
        self.uri = os.environ.get(URI_ENV, "").strip()
        self.enabled = rank == 0 and bool(self.uri)
        self.run_id = None
        self._mlflow = None
        if not self.enabled:
            return
        try:
            if is_folder_uri(self.uri):
                os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
            import mlflow
            mlflow.set_tracking_uri(self.uri)
            mlflow.set_experiment(os.environ.get(EXPERIMENT_ENV, DEFAULT_EXPERIMENT))
            id_file = Path(output_dir) / "mlflow_run_id" if output_dir else None
            previous = id_file.read_text().strip() if id_file is not None and id_file.is_file() else None
            if previous:
                run = mlflow.start_run(run_id=previous)
            else:
                run = mlflow.start_run(run_name=run_name)
                mlflow.log_params({k: str(v)[:500] for k, v in params.items()})
                if id_file is not None:
                    id_file.parent.mkdir(parents=True, exist_ok=True)
                    atomic_write(id_file, run.info.run_id.encode())
            self.run_id = run.info.run_id
            self._mlflow = mlflow
            log("SETUP", rank=rank, mlflow=self.uri, run_id=self.run_id, resumed=bool(previous))
        except Exception as exc:  # noqa: BLE001 - tracking never stops training
            self._disable(exc)

    def _disable(self, exc: BaseException) -> None:
        log("WARN", rank=0, mlflow="disabled", reason=f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
        self.enabled = False
        self._mlflow = None

    def metrics(self, step: int, values: dict) -> None:
        if not self.enabled:
            return
        try:
            self._mlflow.log_metrics({k: float(v) for k, v in values.items() if v is not None}, step=step)
        except Exception as exc:  # noqa: BLE001
            self._disable(exc)

    def artifacts(self, folder: str | os.PathLike, name: str) -> None:
        if not self.enabled:
            return
        try:
            self._mlflow.log_artifacts(str(folder), artifact_path=name)
        except Exception as exc:  # noqa: BLE001
            self._disable(exc)

    def finish(self, status: str = "FINISHED") -> None:
        if not self.enabled:
            return
        try:
            self._mlflow.end_run(status=status)
        except Exception as exc:  # noqa: BLE001
            self._disable(exc)
