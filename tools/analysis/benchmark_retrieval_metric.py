#!/usr/bin/env python
"""Time and peak memory of Recall@K + MAP@R at Stanford Online Products size.

SOP's test set is 60,502 images of 11,316 classes, queried against itself;
its full fp32 similarity matrix would take 14.6 GB. The metric scores it in
query chunks. This script times that and reports the process's peak
resident memory, on random unit vectors (every query's best relevant item
ranks far down: the slowest case) or, with ``--noise``, on class clusters
(centre + Gaussian noise), which rank like a trained model::

    python tools/analysis/benchmark_retrieval_metric.py [--num 60502]
        [--dim 512] [--classes 11316] [--noise SIGMA] [--chunk-size N]
        [--threads T]
"""
import argparse
import os.path as osp
import resource
import sys
import time

import torch

sys.path.insert(0, osp.dirname(osp.dirname(osp.dirname(
    osp.abspath(__file__)))))

from mmdet_rankloss.evaluation.functional import retrieval_metrics  # noqa


def peak_rss_gb() -> float:
    """Peak resident set size of this process so far (Linux: KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--num', type=int, default=60502)
    parser.add_argument('--dim', type=int, default=512)
    parser.add_argument('--classes', type=int, default=11316)
    parser.add_argument('--noise', type=float, default=None)
    parser.add_argument('--chunk-size', type=int, default=None)
    parser.add_argument('--threads', type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    gen = torch.Generator().manual_seed(0)
    labels = torch.randint(0, args.classes, (args.num, ), generator=gen)
    emb = torch.randn(args.num, args.dim, generator=gen)
    if args.noise is not None:
        centres = torch.nn.functional.normalize(
            torch.randn(args.classes, args.dim, generator=gen), dim=1)
        emb.mul_(args.noise).index_add_(0, torch.arange(args.num),
                                        centres[labels])
        del centres
    emb.div_(emb.norm(dim=1, keepdim=True))
    before = peak_rss_gb()
    start = time.time()
    out = retrieval_metrics(
        emb,
        labels,
        ks=(1, 10, 100, 1000),
        with_map_at_r=True,
        chunk_size=args.chunk_size)
    elapsed = time.time() - start
    # for scale: the same chunked matrix products alone, nothing else
    chunk = args.chunk_size or max(1, 2**24 // args.num)
    start = time.time()
    for i in range(0, args.num, chunk):
        emb[i:i + chunk] @ emb.t()
    matmul_only = time.time() - start
    kind = 'random' if args.noise is None else f'clusters, noise {args.noise}'
    print(f'{args.num} x {args.dim} embeddings ({kind}), {args.classes} '
          f'classes, {torch.get_num_threads()} threads, torch '
          f'{torch.__version__}')
    print({k: round(v, 4) if isinstance(v, float) else v
           for k, v in out.items()})
    print(f'time {elapsed:.1f} s (the chunked matrix products alone: '
          f'{matmul_only:.1f} s); peak RSS {peak_rss_gb():.2f} GB '
          f'(before scoring: {before:.2f} GB)')


if __name__ == '__main__':
    main()
