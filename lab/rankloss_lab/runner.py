"""The runner every experiment shares: a plan of runs (hashable items, a
study's ``(method, lr, seed)``), resumable run folders, a pool of jobs,
progress lines with an ETA, and markdown tables.
"""
import json
import os
import os.path as osp
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Dict, Hashable, List, Optional, Sequence, Tuple

__all__ = ['clock', 'Progress', 'lr_tag', 'run_dir', 'read_json', 'write_json',
           'last_checkpoint', 'run_each', 'run_plan', 'markdown_table']


def clock(seconds: float) -> str:
    """``h:mm:ss`` or ``mm:ss``."""
    minutes, sec = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return (f'{hours}:{minutes:02d}:{sec:02d}' if hours else
            f'{minutes:02d}:{sec:02d}')


class Progress:
    """Counts finished steps of a plan and estimates the time left: a
    measured kind costs its mean time, an unmeasured one its weight times
    the measured time per unit weight. ``weights``: each planned step's
    expected cost, any unit; ``kinds``: each step's kind (``'train'``,
    ``'test'``; default: a kind per step, so only the weights matter);
    ``jobs``: steps run side by side; ``prefix``: printed before each line
    of :meth:`step`.
    """

    def __init__(self, weights: Sequence[float],
                 kinds: Optional[Sequence[Hashable]] = None, jobs: int = 1,
                 prefix: str = '  ') -> None:
        self.weights = [float(w) for w in weights]
        self.kinds = list(range(len(self.weights)) if kinds is None else kinds)
        if len(self.kinds) != len(self.weights):
            raise ValueError(f'{len(self.weights)} weights but '
                             f'{len(self.kinds)} kinds')
        self.jobs, self.prefix = max(1, int(jobs)), prefix
        self.done, self.start, self.last = 0, time.time(), time.time()
        self.finished: List[Tuple[Hashable, float, float]] = []
        self._lock = threading.Lock()

    def record(self, seconds: Optional[float] = None,
               kind: Optional[Hashable] = None) -> Tuple[int, float]:
        """One more step done; returns (steps done, ETA in seconds).
        ``seconds`` defaults to the time since the previous step (steps run
        one after the other); ``kind`` to the next planned step's."""
        with self._lock:
            now = time.time()
            if seconds is None:
                seconds = now - self.last
            self.last = now
            todo = list(zip(self.kinds, self.weights))
            for done_kind, _, _ in self.finished:
                todo.remove(next(t for t in todo if t[0] == done_kind))
            if kind is None:
                kind = todo[0][0]
            weight = next(w for k, w in todo if k == kind)
            todo.remove((kind, weight))
            self.finished.append((kind, weight, float(seconds)))
            self.done += 1
            return self.done, self._left(todo)

    def _left(self, todo: List[Tuple[Hashable, float]]) -> float:
        spent = sum(s for _, _, s in self.finished)
        per_unit = spent / max(sum(w for _, w, _ in self.finished), 1e-12)
        measured: Dict[Hashable, List[float]] = {}
        for kind, _, seconds in self.finished:
            measured.setdefault(kind, []).append(seconds)
        left = sum(
            sum(measured[k]) / len(measured[k]) if k in measured else
            w * per_unit for k, w in todo)
        return left / self.jobs

    def step(self, what: Optional[str] = None, seconds: Optional[float] = None,
             kind: Optional[Hashable] = None) -> float:
        """Records a step (see :meth:`record`) and prints ``[k/n] <what>
        done; elapsed mm:ss, ETA mm:ss``; returns the ETA in seconds."""
        done, left = self.record(seconds, kind)
        took = '' if seconds is None else f' in {seconds:.0f} s'
        name = f'{what} done{took}; ' if what else ''
        print(f'{self.prefix}[{done}/{len(self.weights)}] {name}elapsed '
              f'{clock(time.time() - self.start)}, ETA {clock(left)}',
              flush=True)
        return left


def lr_tag(lr: float) -> str:
    return f'lr{lr:g}'


def run_dir(work_dir: str, study: str, method: str, lr: float,
            seed: int) -> str:
    """``<work_dir>/<study>/<method>/lr<lr>_seed<seed>``: one run's folder."""
    return osp.join(work_dir, study, method, f'{lr_tag(lr)}_seed{seed}')


def read_text(path: str) -> Optional[str]:
    """The text file at ``path``, or None when there is none."""
    if not osp.isfile(path):
        return None
    with open(path, encoding='utf-8') as f:
        return f.read()


def read_json(path: str) -> Optional[dict]:
    """The JSON file at ``path``, or None when there is none."""
    text = read_text(path)
    return None if text is None else json.loads(text)


def last_checkpoint(directory: str, required: bool = False) -> Optional[str]:
    """The checkpoint MMEngine's ``last_checkpoint`` pointer in a work
    directory names; None (an error if ``required``) without one."""
    pointer = osp.join(directory, 'last_checkpoint')
    if not osp.isfile(pointer):
        if required:
            raise FileNotFoundError(
                f'{directory}: no last_checkpoint: the run has not trained')
        return None
    with open(pointer, encoding='utf-8') as f:
        return osp.join(directory, f.read().strip())


def write_json(path: str, data: dict, indent: int = 1) -> None:
    """Writes ``data`` through a temporary file: never a half-written
    result, which a resumed plan would take for a finished run."""
    tmp = path + '.tmp'
    with open(tmp, 'w', encoding='utf-8') as f:
        json.dump(data, f, indent=indent)
    os.replace(tmp, path)


def run_each(one: Callable, items: Sequence, jobs: int) -> list:
    """``one(item)`` for every item, ``jobs`` at a time (threads that wait
    on training processes); the first error is raised at the end."""
    if jobs > 1:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(one, items))
    return [one(item) for item in items]


def run_plan(plan: Sequence[Hashable], run: Callable[[Hashable], dict],
             finished: Callable[[Hashable], bool],
             describe: Callable[[Hashable, dict], str], jobs: int = 1,
             header: str = '', prefix: str = '',
             weights: Optional[Sequence[float]] = None) -> list:
    """Runs the items of ``plan`` that are not ``finished``, ``jobs`` at a
    time, printing a line per run with ``describe(item, result)`` and the
    ETA (:class:`Progress` with ``weights``); returns ``run(item)`` of the
    items run, in the plan's order."""
    todo = [item for item in plan if not finished(item)]
    print(f'{header}: {len(plan)} runs, {len(plan) - len(todo)} done, '
          f'{len(todo)} to run', flush=True)
    if weights is not None:
        weights = [w for item, w in zip(plan, weights) if item in todo]
    progress = Progress(weights or [1.0] * len(todo), ['run'] * len(todo)
                        if weights is None else None, jobs)

    def one(item):
        t0 = time.perf_counter()
        result = run(item)
        seconds = time.perf_counter() - t0
        done, eta = progress.record(
            seconds, None if weights is None else progress.kinds[todo.index(
                item)])
        print(f'{prefix}{done}/{len(todo)} {describe(item, result)} '
              f'({seconds:.0f} s); ETA {eta / 60:.1f} min', flush=True)
        return result

    return run_each(one, todo, jobs)


def markdown_table(head: Sequence[str], rows: Sequence[Sequence]) -> str:
    """A markdown table: the header, its rule and one line per row."""
    lines = ['| ' + ' | '.join(map(str, head)) + ' |',
             '|' + '---|' * len(head)]
    lines += ['| ' + ' | '.join(map(str, row)) + ' |' for row in rows]
    return '\n'.join(lines)
