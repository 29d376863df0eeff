"""What happened in a local run: starts, restarts, resumes, exits, faults, steps and loss.

Printed as it happens (one line an event), written as JSON lines, and drawn as a
PNG with the faults marked (`--timeline FILE.png`).
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TextIO

# The samples' log lines (training/trainkit/log.py: `[TAG] key=value ...`, values JSON-quoted when they
# hold spaces); kdt reads them back here and imports nothing from training/.
_LINE = re.compile(r"^\[([A-Z]+)\]\s(.*)$")
_FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S*)')


def read_tagged(line: str) -> tuple[str, dict] | None:
    m = _LINE.match(line.strip())
    if not m:
        return None
    fields = {}
    for k, v in _FIELD.findall(m.group(2)):
        fields[k] = json.loads(v) if v.startswith('"') else v
    return m.group(1), fields


@dataclass
class Event:
    t: float                   # seconds since the run started
    kind: str                  # start | exit | restart | recreate | jobset-restart | job-restart | kill | lose | resume | ckpt | train | done | note | verdict
    pod: str = ""
    text: str = ""
    data: dict = field(default_factory=dict)


class Timeline:
    def __init__(self, out: TextIO | None, quiet_steps: float = 2.0):
        self.t0 = time.time()
        self.events: list[Event] = []
        self.out = out         # None: record only
        self._last_step_print = -1e9
        self.quiet_steps = quiet_steps

    def now(self) -> float:
        return time.time() - self.t0

    def add(self, kind: str, pod: str = "", text: str = "", t: float | None = None, **data) -> Event:
        e = Event(round(self.now() if t is None else t, 3), kind, pod, text, data)
        self.events.append(e)
        show = kind != "train" or (e.t - self._last_step_print >= self.quiet_steps)
        if kind == "train" and show:
            self._last_step_print = e.t
        if show and self.out:
            who = f" {pod}" if pod else ""
            print(f"[{e.t:7.1f}s]{who} {kind}: {text}".rstrip(), file=self.out, flush=True)
        return e

    def write_jsonl(self, path: Path) -> None:
        path.write_text("".join(json.dumps(asdict(e)) + "\n" for e in self.events))

    def png(self, path: Path, title: str) -> None:
        """Loss against time (one line per pod's lowest rank), pods' lives as bars, faults as red lines."""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        pods = sorted({e.pod for e in self.events if e.pod}, key=lambda p: (len(p), p))
        fig, (ax_loss, ax_pods) = plt.subplots(2, 1, figsize=(11, 3 + 0.35 * max(3, len(pods))), sharex=True,
                                               gridspec_kw={"height_ratios": [2, max(1, len(pods) * 0.35)]})
        series: dict[str, list[tuple[float, float]]] = {}
        for e in self.events:
            if e.kind == "train" and "loss" in e.data:
                try:
                    series.setdefault(e.pod, []).append((e.t, float(e.data["loss"])))
                except ValueError:
                    pass
        for pod, pts in series.items():
            ax_loss.plot([p[0] for p in pts], [p[1] for p in pts], ".-", ms=3, lw=1, label=pod)
        ax_loss.set_ylabel("loss")
        if series:
            ax_loss.legend(fontsize=7, loc="upper right")
        ends = self.now()
        for row, pod in enumerate(pods):
            start = None
            for e in self.events:
                if e.pod != pod:
                    continue
                if e.kind == "start":
                    start = e.t
                elif e.kind in ("exit", "lose") and start is not None:
                    ax_pods.barh(row, e.t - start, left=start, color="tab:green" if e.data.get("code") == 0 else "tab:blue")
                    start = None
                if e.kind == "resume" and str(e.data.get("step")) not in ("None", "0"):
                    ax_pods.plot(e.t, row, "k^", ms=6)
            if start is not None:
                ax_pods.barh(row, ends - start, left=start, color="tab:blue")
        ax_pods.set_yticks(range(len(pods)), pods, fontsize=7)
        for e in self.events:
            if e.kind in ("kill", "lose", "jobset-restart", "job-restart", "recreate"):
                color = "red" if e.kind in ("kill", "lose") else "orange"
                for ax in (ax_loss, ax_pods):
                    ax.axvline(e.t, color=color, ls="--", lw=1)
                ax_loss.annotate(f"{e.kind} {e.pod}", (e.t, 1), xycoords=("data", "axes fraction"),
                                 fontsize=7, color=color, rotation=90, va="top", ha="right")
        verdict = next((e.text for e in reversed(self.events) if e.kind == "verdict"), "")
        ax_loss.set_title(f"{title}: {verdict}"[:140], fontsize=9)
        ax_pods.set_xlabel("seconds since the run started (bars: pods alive; ^: resumed from a checkpoint)")
        fig.tight_layout()
        tmp = path.with_name(f".{path.name}.tmp.png")
        fig.savefig(tmp, dpi=110)
        plt.close(fig)
        tmp.replace(path)
