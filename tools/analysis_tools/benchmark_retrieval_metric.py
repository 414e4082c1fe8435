#!/usr/bin/env python
"""Time and peak memory of Recall@K + MAP@R at Stanford Online Products size.

SOP's test set is 60,502 images of 11,316 classes, queried against itself;
its full fp32 similarity matrix would take 14.6 GB. The metric scores it in
query chunks. This script times that on generated embeddings: random unit
vectors (every query's best relevant item ranks far down) or, with
``--noise``, class clusters (centre + Gaussian noise), which rank like a
trained model. In the same run it can time, on the same embeddings:

* ``--floor``: the chunked matrix products alone, and with a
  ``topk(k=1001)`` per row (what a top-1000 search must do at least);
* ``--compare faiss``: faiss-cpu's exact ``IndexFlatIP`` search with
  k = max(K) + 1, Recall@K computed from its neighbour lists (self removed
  by index), checked against ours;
* ``--compare reid``: MMDetection's ``ReIDMetrics`` (full distance matrix
  and a full argsort, CMC up to rank 20) on the first ``--reid-num`` items,
  its CMC@K checked against our Recall@K on the same items.

Peak memory is the rise of the process's peak resident set size over what
it held before each step (Linux ``/proc/self/status`` VmHWM, reset per
step)::

    python tools/analysis_tools/benchmark_retrieval_metric.py [--num 60502]
        [--dim 512] [--classes 11316] [--noise SIGMA] [--chunk-size N]
        [--threads T] [--floor] [--compare faiss reid] [--reid-num 10000]
        [--out RESULTS.json]

After every timed step a line gives the steps done, the time spent and an
ETA (every step scores n x n similarities, so a step on m items is weighted
(m / n)^2). ``--out`` also writes every number to a JSON file.
"""
import argparse
import json
import os
import os.path as osp
import resource
import time

import numpy as np
import torch

from mmdet_rankloss.evaluation import functional  # noqa
from mmdet_rankloss.evaluation.functional import retrieval_metrics  # noqa

from rankloss_lab.runner import Progress  # noqa

KS = (1, 10, 100, 1000)
REID_KS = (1, 5, 10, 20)  # ReIDMetrics stops at rank 20


def _status_kb(key: str) -> int:
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith(key + ':'):
                return int(line.split()[1])
    raise KeyError(key)


class PeakMemory:
    """Peak RSS reached inside the block, minus the RSS at its start (GB).

    Resets the kernel's high-water mark (``/proc/self/clear_refs``); where
    that is not possible, reports the process's peak so far instead
    (``exact`` is then False).
    """

    def __enter__(self):
        try:
            with open('/proc/self/clear_refs', 'w') as f:
                f.write('5')
            self.start = _status_kb('VmRSS')
            self.exact = True
        except OSError:
            self.start, self.exact = 0, False
        return self

    def __exit__(self, *exc):
        if self.exact:
            peak = _status_kb('VmHWM')
        else:
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        self.gb = (peak - self.start) / 2**20
        return False

    def __str__(self):
        return (f'+{self.gb:.2f} GB' if self.exact else
                f'{self.gb:.2f} GB (process peak)')


def make_embeddings(num, dim, classes, noise, seed=0):
    gen = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, classes, (num, ), generator=gen)
    emb = torch.randn(num, dim, generator=gen)
    if noise is not None:
        centres = torch.nn.functional.normalize(
            torch.randn(classes, dim, generator=gen), dim=1)
        emb.mul_(noise).index_add_(0, torch.arange(num), centres[labels])
        del centres
    emb.div_(emb.norm(dim=1, keepdim=True))
    return emb, labels


def timed(fn):
    with PeakMemory() as mem:
        start = time.perf_counter()
        out = fn()
        elapsed = time.perf_counter() - start
    return out, elapsed, mem


def floor(emb, chunk, k):
    """Chunked fp32 products (and a top-k of each row when k) alone."""
    gallery_t = emb.t()
    buf = torch.empty(chunk * emb.shape[0])
    for i in range(0, emb.shape[0], chunk):
        rows = min(chunk, emb.shape[0] - i)
        scores = torch.mm(
            emb[i:i + rows],
            gallery_t,
            out=buf[:rows * emb.shape[0]].view(rows, -1))
        if k:
            scores.topk(k, dim=1, sorted=False)


def recall_from_neighbours(neighbours: np.ndarray, labels: np.ndarray,
                           ks) -> dict:
    """Recall@K of self-retrieval from (N, >= max(K) + 1) neighbour lists.

    The query is removed by index wherever it appears (not by position);
    rows where it does not appear keep their first max(K) neighbours.
    Queries without another item of their class are left out.
    """
    kmax = max(ks)
    is_self = neighbours == np.arange(len(neighbours))[:, None]
    keep = np.argsort(is_self, axis=1, kind='stable')[:, :kmax]
    neighbours = np.take_along_axis(neighbours, keep, 1)
    match = labels[neighbours] == labels[:, None]
    first = np.where(match.any(1), match.argmax(1) + 1, kmax + 1)
    counts = np.bincount(labels)
    valid = counts[labels] > 1
    return {
        f'R@{k}': float((first[valid] <= k).sum()) / max(int(valid.sum()), 1)
        for k in ks
    }


def run_faiss(emb, labels, ks, threads):
    import faiss
    if threads:
        faiss.omp_set_num_threads(threads)
    data = np.ascontiguousarray(emb.numpy())

    def search():
        index = faiss.IndexFlatIP(data.shape[1])
        index.add(data)
        return index.search(data, max(ks) + 1)[1]

    neighbours, elapsed, mem = timed(search)
    return recall_from_neighbours(neighbours, labels.numpy(), ks), \
        elapsed, mem


def run_reid(emb, labels):
    from mmdet.evaluation.metrics import ReIDMetrics
    metric = ReIDMetrics(
        metric=['mAP', 'CMC'],
        metric_options=dict(rank_list=list(REID_KS), max_rank=max(REID_KS)))
    results = [
        dict(pred_feature=emb[i], gt_label=labels[i:i + 1])
        for i in range(len(emb))
    ]
    return timed(lambda: metric.compute_metrics(results))


def fmt(values: dict) -> str:
    return ', '.join(f'{k} {v:.4f}' if isinstance(v, float) else f'{k} {v}'
                     for k, v in values.items())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--num', type=int, default=60502)
    parser.add_argument('--dim', type=int, default=512)
    parser.add_argument('--classes', type=int, default=11316)
    parser.add_argument('--noise', type=float, default=None)
    parser.add_argument('--chunk-size', type=int, default=None)
    parser.add_argument('--threads', type=int, default=None)
    parser.add_argument(
        '--floor',
        action='store_true',
        help='also time the chunked products alone and with a topk(1001)')
    parser.add_argument(
        '--compare', nargs='*', default=[], choices=['faiss', 'reid'])
    parser.add_argument(
        '--reid-num',
        type=int,
        default=10000,
        help='items for the ReIDMetrics comparison (its memory grows as '
        'about 25 bytes x n^2)')
    parser.add_argument('--out', help='also write the results to this JSON')
    args = parser.parse_args(argv)
    if args.num < 2 or args.dim < 1 or args.classes < 1:
        raise ValueError('--num must be >= 2, --dim and --classes >= 1')
    if args.threads:
        torch.set_num_threads(args.threads)
    emb, labels = make_embeddings(args.num, args.dim, args.classes,
                                  args.noise)
    ks = tuple(k for k in KS if k < args.num)
    kind = 'random' if args.noise is None else f'clusters, noise {args.noise}'
    print(f'{args.num} x {args.dim} embeddings ({kind}), {args.classes} '
          f'classes, {torch.get_num_threads()} threads, torch '
          f'{torch.__version__}')
    reid_share = (min(args.reid_num, args.num) / args.num)**2
    progress = Progress([1.0] + [1.0, 1.0] * args.floor +
                        [1.0] * ('faiss' in args.compare) +
                        [reid_share] * 2 * ('reid' in args.compare))
    record = dict(num=args.num, dim=args.dim, classes=args.classes,
                  noise=args.noise, threads=torch.get_num_threads(),
                  torch=torch.__version__)

    ours, elapsed, mem = timed(lambda: retrieval_metrics(
        emb, labels, ks=ks, with_map_at_r=True, chunk_size=args.chunk_size))
    print(f'ours (R@K + MAP@R): {elapsed:.1f} s, peak memory {mem}; '
          f'{fmt(ours)}')
    record['ours'] = dict(seconds=elapsed, peak_gb=mem.gb, **ours)
    progress.step('ours')

    chunk = min(
        args.chunk_size
        or max(1, functional._DEFAULT_CHUNK_ELEMENTS // args.num), args.num)
    if args.floor:
        for k in (0, min(1001, args.num)):
            _, elapsed, mem = timed(lambda: floor(emb, chunk, k))
            what = f'+ topk(k={k})' if k else 'alone'
            print(f'floor: chunked products ({chunk} rows) {what}: '
                  f'{elapsed:.1f} s, peak memory {mem}')
            record[f'floor_topk{k}'] = dict(seconds=elapsed, peak_gb=mem.gb)
            progress.step(f'floor {what}')

    if 'faiss' in args.compare:
        ref, elapsed, mem = run_faiss(emb, labels, ks, args.threads)
        same = all(ref[f'R@{k}'] == ours[f'R@{k}'] for k in ks)
        diff = max(abs(ref[f'R@{k}'] - ours[f'R@{k}']) for k in ks)
        print(f'faiss IndexFlatIP, k={max(ks) + 1}: {elapsed:.1f} s, peak '
              f'memory {mem}; {fmt(ref)}; '
              + ('identical to ours' if same else
                 f'DIFFERS from ours by up to {diff:.2e}'))
        record['faiss'] = dict(seconds=elapsed, peak_gb=mem.gb,
                               max_diff=diff, **ref)
        progress.step('faiss')

    if 'reid' in args.compare:
        num = min(args.reid_num, args.num)
        sub_emb, sub_labels = emb[:num].clone(), labels[:num].clone()
        ref, elapsed, mem = run_reid(sub_emb, sub_labels)
        print(f'mmdet ReIDMetrics on the first {num} items: {elapsed:.1f} '
              f's, peak memory {mem}; '
              f'{fmt({k: float(v) for k, v in ref.items()})}')
        record['reid'] = dict(num=num, seconds=elapsed, peak_gb=mem.gb,
                              **{k: float(v) for k, v in ref.items()})
        progress.step('ReIDMetrics')
        mine, elapsed, mem = timed(lambda: retrieval_metrics(
            sub_emb, sub_labels, ks=REID_KS, with_map_at_r=True))
        print(f'ours on the same {num} items: {elapsed:.1f} s, peak memory '
              f'{mem}; {fmt(mine)}')
        record['ours_reid_items'] = dict(seconds=elapsed, peak_gb=mem.gb,
                                         **mine)
        progress.step('ours on the ReIDMetrics items')
        # ReIDMetrics rounds to 3 decimals; its mAP averages precision over
        # all relevant items of the full ranking (not MAP@R): not compared
        diff = max(
            abs(float(ref[f'R{k}']) - mine[f'R@{k}']) for k in REID_KS)
        print('CMC@K vs our R@K: ' +
              ('agree to its 3 decimals' if diff <= 5e-4 + 1e-12 else
               f'DIFFER by up to {diff:.4f}'))
        record['reid']['max_diff'] = diff
    if args.out:
        if osp.dirname(args.out):
            os.makedirs(osp.dirname(args.out), exist_ok=True)
        with open(args.out, 'w', encoding='utf-8') as f:
            json.dump(record, f, indent=1)
        print(f'results written to {args.out}')
    else:
        print('results printed above (--out FILE.json also saves them)')


if __name__ == '__main__':
    main()
