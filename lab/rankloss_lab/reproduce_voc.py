"""Trains and tests the CE / RaMBO pairs of the RaMBO paper's Table 5 on VOC.

``python tools/reproduce_voc.py`` writes ``<work-dir>/table5.md`` beside the
paper's numbers (docs/evidence.md#reproducing-the-papers-voc-table); finished
pairs are skipped, an interrupted training resumes; one seed per pair, as the
paper.
"""
import argparse
import os
import os.path as osp
import sys

from rankloss_lab.batch import per_process_batch
from rankloss_lab.paths import ROOT
from rankloss_lab.run_logs import machine_name, read_scalars, run_logged
from rankloss_lab.runner import (last_checkpoint, markdown_table, read_json,
                                 run_plan, write_json)

#: Table 5 of Rolinek et al. (CVPR 2020): backbone, training data, paper
#: AP50 for CE and RaMBO on VOC2007 test (paper numbers), our configs.
ROWS = {
    'r50_voc07': ('ResNet-50', 'VOC07', 74.2, 75.7,
                  'faster-rcnn_r50_fpn_{}_1x_voc07.py'),
    'r50_voc0712': ('ResNet-50', 'VOC07+12', 80.4, 81.4,
                    'faster-rcnn_r50_fpn_{}_1x_voc0712.py'),
    'r101_voc0712': ('ResNet-101', 'VOC07+12', 82.4, 82.9,
                     'faster-rcnn_r101_fpn_{}_1x_voc0712.py'),
    'x101_voc0712': ('ResNeXt-101 32x4d', 'VOC07+12', 83.2, 83.6,
                     'faster-rcnn_x101-32x4d_fpn_{}_1x_voc0712.py'),
}
LOSSES = ('ce', 'rambo')
#: The paper's batch: 8 images on one device (Sec. 5.2), the base_batch_size
#: of the configs' auto_scale_lr.
PAPER_TOTAL_BATCH = 8


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--rows', nargs='+', default=list(ROWS),
                        choices=list(ROWS))
    parser.add_argument('--gpus', type=int, default=1)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument(
        '--rambo-lr', type=float, default=None,
        help="RaMBO's lr at batch 8 (default: the configs', the paper's "
        "0.1; 0.01 is twice CE's, chosen on DigitsVOC val, docs/evidence.md)")
    parser.add_argument('--work-dir', default='work_dirs/reproduce_voc')
    parser.add_argument('--cfg-options', nargs='+', default=[],
                        help='KEY=VALUE overrides for every run')
    return parser.parse_args(argv)


def train_and_test(config: str, directory: str, options, gpus: int) -> dict:
    result_path = osp.join(directory, 'result.json')
    result = read_json(result_path)
    if result is not None:
        return result
    os.makedirs(directory, exist_ok=True)
    log = osp.join(directory, 'run.log')
    train = (['bash', 'tools/dist_train.sh', config, str(gpus)] if gpus > 1
             else [sys.executable, 'tools/train.py', config])
    train += ['--work-dir', directory]
    if last_checkpoint(directory):
        train.append('--resume')
    seconds = run_logged(train + ['--cfg-options'] + options, log, cwd=ROOT)
    ckpt = last_checkpoint(directory, required=True)
    test_dir = osp.join(directory, 'test')
    run_logged([sys.executable, 'tools/test.py', config, ckpt, '--work-dir',
                test_dir, '--cfg-options'] + options, log, cwd=ROOT)
    ap = read_scalars(test_dir, 'pascal_voc/AP50')
    if not ap:
        raise RuntimeError(f'{test_dir}: tools/test.py logged no AP50')
    result = dict(config=config, ap50=ap[max(ap)], train_seconds=seconds,
                  machine=machine_name())
    write_json(result_path, result)
    return result


def format_table(results: dict) -> str:
    """The paper's layout, the paper's numbers beside ours (labelled)."""
    rows = []
    for row, (backbone, data, p_ce, p_rambo, _) in ROWS.items():
        if row not in results:
            continue
        ours = {k: v['ap50'] * 100 for k, v in results[row].items()}

        def cell(loss):
            return f'{ours[loss]:.1f}' if loss in ours else '-'

        diff = (f'{ours["rambo"] - ours["ce"]:+.1f}'
                if len(ours) == 2 else '-')
        rows.append([backbone, data, f'{p_ce:.1f}', cell('ce'),
                     f'{p_rambo:.1f}', cell('rambo'),
                     f'{p_rambo - p_ce:+.1f}', diff])
    return markdown_table(
        ['backbone', 'training data', 'CE AP50, paper', 'CE AP50, ours',
         'RaMBO AP50, paper', 'RaMBO AP50, ours', 'RaMBO - CE, paper',
         'RaMBO - CE, ours'], rows) + '\n'


def main(argv=None) -> str:
    args = parse_args(argv)
    work_dir = osp.abspath(args.work_dir)
    options = [f'randomness.seed={args.seed}']
    if args.gpus > 1:
        # the paper's total batch split over the devices, so that the
        # configs' auto_scale_lr keeps the paper's lr (the same split as
        # tools/dist_train.sh --total-batch, docs/multi_gpu.md)
        try:
            per = per_process_batch(PAPER_TOTAL_BATCH, args.gpus)
        except ValueError as e:
            raise SystemExit(f'--gpus {args.gpus}: the paper trains with a '
                             f'total batch of {PAPER_TOTAL_BATCH}: {e}')
        options.append(f'train_dataloader.batch_size={per}')
    options += list(args.cfg_options)
    todo = [(row, loss) for row in args.rows for loss in LOSSES]

    def pair(item):
        """(config, run folder, options) of a (row, loss) pair."""
        row, loss = item
        config = osp.join('configs', 'rambo', ROWS[row][4].format(loss))
        run_options, name = list(options), loss
        if loss == 'rambo' and args.gpus > 1:
            # rank the RoIs of all devices together, as the paper's one
            # device ranked its whole batch
            run_options.insert(
                0, 'model.roi_head.bbox_head.loss_cls.global_ranking=True')
        if loss == 'rambo' and args.rambo_lr is not None:
            run_options.insert(0,
                               f'optim_wrapper.optimizer.lr={args.rambo_lr}')
            name = f'rambo_lr{args.rambo_lr:g}'
        return config, osp.join(work_dir, row, name), run_options

    run_plan(todo, lambda item: train_and_test(*pair(item), args.gpus),
             lambda item: osp.isfile(osp.join(pair(item)[1], 'result.json')),
             lambda item, res: f'{item[0]} {item[1]}: AP50 '
             f'{100 * res["ap50"]:.1f}', header='[reproduce_voc] Table 5',
             prefix='[reproduce_voc] ')
    results: dict = {}
    for item in todo:
        results.setdefault(item[0], {})[item[1]] = read_json(
            osp.join(pair(item)[1], 'result.json'))
    table = format_table(results)
    machines = sorted({r['machine'] for v in results.values()
                       for r in v.values()})
    text = ('# RaMBO paper, Table 5: Faster R-CNN on VOC2007 test (AP50)\n\n'
            + table + '\nPaper numbers from Rolinek et al., CVPR 2020, '
            f'Table 5. Ours: one seed ({args.seed}), measured on '
            f'{"; ".join(machines)}.\n')
    path = osp.join(work_dir, 'table5.md')
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)
    print(text + f'\nwritten to {path}', flush=True)
    return path


if __name__ == '__main__':
    main()
