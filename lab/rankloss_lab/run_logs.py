"""What the experiments and tools need of an MMEngine run: its JSON logs
(read oldest first, so a resumed run's records replace earlier ones), the
machine it ran on, a logged subprocess, figures and an epoch watcher.
"""
import glob
import json
import os
import os.path as osp
import platform
import re
import subprocess
import threading
import time
from typing import Dict, Iterator, List, Optional

from .runner import clock

__all__ = ['log_files', 'read_records', 'read_scalars', 'last_record',
           'machine_name', 'run_logged', 'plot_mean_band', 'save_figure',
           'epochs_done', 'EpochWatcher']


def log_files(work_dir: str, train_only: bool = False) -> List[str]:
    """MMEngine JSON logs under ``work_dir``, oldest first; ``train_only``:
    the training runs' (``vis_data``) alone."""
    paths = glob.glob(osp.join(work_dir, '*', 'vis_data', '*.json'))
    if not train_only:
        paths += glob.glob(osp.join(work_dir, '*', '*.json'))
    return sorted((p for p in paths if osp.basename(p) != 'scalars.json'),
                  key=osp.getmtime)


def read_records(work_dir: str, key: str,
                 train_only: bool = False) -> Iterator[dict]:
    """Every logged record that holds ``key``, oldest log first."""
    for path in log_files(work_dir, train_only):
        with open(path, encoding='utf-8') as f:
            for line in f:
                line = line.strip()
                if line.startswith('{') and f'"{key}"' in line:
                    record = json.loads(line)
                    if key in record:
                        yield record


def read_scalars(work_dir: str, key: str, step_key: str = 'step',
                 train_only: bool = False) -> Dict[int, float]:
    """``{step: value}`` of the logged scalar ``key`` in ``work_dir``, later
    logs overriding earlier ones; ``step_key``: ``'step'`` (a val record's
    epoch) or ``'iter'``."""
    return {int(record.get(step_key, 0)): float(record[key])
            for record in read_records(work_dir, key, train_only)}


def last_record(work_dir: str, key: str,
                train_only: bool = False) -> Optional[dict]:
    """The last logged record holding ``key`` (None if there is none)."""
    record = None
    for record in read_records(work_dir, key, train_only):
        pass
    return record


def machine_name() -> str:
    """The device the numbers were measured on, as reports name it."""
    import torch
    if torch.cuda.is_available():
        device = torch.cuda.get_device_name(0)
    else:
        cpu = platform.processor() or platform.machine()
        try:
            with open('/proc/cpuinfo', encoding='utf-8') as f:
                for line in f:
                    if line.startswith('model name'):
                        cpu = line.split(':', 1)[1].strip()
                        break
        except OSError:
            pass
        device = f'{os.cpu_count()}-core CPU ({cpu})'
    return f'{device}, torch {torch.__version__}'


def run_logged(cmd: List[str], log_path: str, cwd: Optional[str] = None,
               append: bool = True, echo: bool = False) -> float:
    """Runs ``cmd`` with its output in ``log_path`` (one intra-op thread
    unless the environment chose); returns its seconds. RuntimeError if
    it fails, the message holding the log's tail."""
    if echo:
        print('$ ' + ' '.join(cmd), flush=True)
    env = dict(os.environ)
    env.setdefault('OMP_NUM_THREADS', '1')
    start = time.perf_counter()
    with open(log_path, 'a' if append else 'w', encoding='utf-8') as log:
        log.write('$ ' + ' '.join(cmd) + '\n')
        log.flush()
        proc = subprocess.run(
            cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        with open(log_path, encoding='utf-8') as f:
            tail = ''.join(f.readlines()[-40:])
        raise RuntimeError(f'command failed ({proc.returncode}): '
                           f'{" ".join(cmd)}\nlog {log_path}:\n{tail}')
    return seconds


def plot_mean_band(ax, runs, label: str, color=None, marker: str = 'o',
                   linestyle: str = '-'):
    """Draws runs (a seeds x epochs array, NaN: not logged) against the
    epoch: their mean as a line and, for more than one run, the min..max
    band; returns the line."""
    import warnings

    import numpy as np
    arr = np.asarray(runs, dtype=float)
    epochs = np.arange(1, arr.shape[1] + 1)
    with warnings.catch_warnings():  # an epoch no run logged stays NaN
        warnings.simplefilter('ignore', RuntimeWarning)
        mean, low, high = (np.nanmean(arr, 0), np.nanmin(arr, 0),
                           np.nanmax(arr, 0))
    line, = ax.plot(epochs, mean, marker=marker, ms=3, color=color,
                    linestyle=linestyle, label=label)
    if arr.shape[0] > 1:
        ax.fill_between(epochs, low, high, alpha=0.2, color=line.get_color())
    return line


def save_figure(fig, path: str, dpi: Optional[float] = None) -> str:
    """Writes a figure to ``path`` (folder made), closes it, returns path."""
    import matplotlib.pyplot as plt
    if osp.dirname(path):
        os.makedirs(osp.dirname(path), exist_ok=True)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


_EPOCH_LINE = re.compile(r'Epoch\(train\)\s*\[(\d+)\]\[\s*(\d+)/(\d+)\]')


def epochs_done(log_path: str) -> int:
    """Training epochs a run's console log shows finished (MMEngine's
    ``Epoch(train) [e][i/n]`` lines; 0 while there is none)."""
    if not osp.isfile(log_path):
        return 0
    done = 0
    with open(log_path, encoding='utf-8', errors='replace') as f:
        for line in f:
            m = _EPOCH_LINE.search(line)
            if m:
                epoch, it, n = map(int, m.groups())
                done = max(done, epoch if it == n else epoch - 1)
    return done


class EpochWatcher:
    """A thread that prints a line per epoch a training run finishes, with the
    trainings' ETA, from their console logs: ``runs``, ``{name: (log path,
    max epochs)}``, ``jobs`` of them trained side by side, the logs read
    every ``every`` seconds, ``prefix`` before each line."""

    def __init__(self, runs: Dict[str, tuple], jobs: int = 1,
                 prefix: str = '', every: float = 5.0) -> None:
        self.runs, self.jobs = dict(runs), max(1, jobs)
        self.prefix, self.every = prefix, every
        self.done = {name: 0 for name in self.runs}
        self.started: Dict[str, float] = {}
        self.t0 = time.time()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> 'EpochWatcher':
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.poll()  # the epochs finished since the last read

    def eta(self, now: float) -> Optional[float]:
        """Seconds until every run has trained: each started run's epochs
        left at its own pace, the runs not started at the mean pace."""
        paces = {n: (now - self.started[n]) / self.done[n]
                 for n in self.runs if self.done[n] and n in self.started}
        if not paces:
            return None
        pace = sum(paces.values()) / len(paces)
        left = [(epochs - self.done[name]) * paces.get(name, pace)
                for name, (_, epochs) in self.runs.items()]
        return sum(left) / min(self.jobs, len(left))

    def poll(self, now: Optional[float] = None) -> List[str]:
        """Reads the logs once; returns (and prints) the new lines."""
        now = time.time() if now is None else now
        lines = []
        for name, (log_path, epochs) in self.runs.items():
            if name not in self.started and osp.isfile(log_path):
                self.started[name] = now
            done = epochs_done(log_path)
            if done > self.done[name]:
                self.done[name] = done
                eta = self.eta(now)
                lines.append(
                    f'{self.prefix}{name}: epoch {done}/{epochs} trained; '
                    f'elapsed {clock(now - self.t0)}' +
                    ('' if eta is None else f', trainings ETA {clock(eta)}'))
        for line in lines:
            print(line, flush=True)
        return lines

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            self.poll()
