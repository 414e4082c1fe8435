"""The command line of the study tool (``python tools/study.py SPEC`` or
``python -m rankloss_lab.study SPEC``): the phases in order, a dry run, the
freeze, the report."""
import argparse
import os.path as osp
from typing import Dict, Sequence

from rankloss_lab.stats import COLLAPSE_BELOW
from .common import DESCRIPTION, collect_results, declared_methods
from .freeze import check_preregistration, freeze, read_preregistration
from .report import write_report
from .runs import ensure_data, run_plan
from .selection import reselect_plan, select_plan, selected_lrs
from .spec import load_spec, requested_methods
from .test import test_methods, test_plan


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=DESCRIPTION)
    parser.add_argument('spec',
                        help='study spec (lab/rankloss_lab/studies/*.py)')
    parser.add_argument('--phase', choices=('select', 'test', 'all'),
                        default='all')
    parser.add_argument('--jobs', type=int, default=1)
    parser.add_argument('--work-dir', default='work_dirs/studies')
    parser.add_argument('--out-dir', default='docs/evidence')
    parser.add_argument('--records-dir',
                        help='where each run\'s result is also kept, so that '
                        'the study resumes without its work directories '
                        '(default: <out-dir>/runs)')
    parser.add_argument('--methods', nargs='+',
                        help='only these methods (default: all)')
    parser.add_argument('--dry-run', action='store_true',
                        help='print the runs that would be started and '
                        'write no report')
    parser.add_argument('--report-only', action='store_true',
                        help='write the report from finished runs only')
    parser.add_argument('--freeze', action='store_true',
                        help='write the pre-registration (hypotheses, test '
                        'seeds, selected settings, date, settings hash) to '
                        '<out-dir>/<study>_preregistration.json and .md; '
                        'run nothing')
    parser.add_argument('--exploratory', action='store_true',
                        help='in a frozen study, also test methods that no '
                        'hypothesis declares (the report labels them '
                        'exploratory)')
    return parser.parse_args(argv)


def select_phase(spec: dict, methods: Sequence[str], work_dir: str,
                 records: str, jobs: int, dry_run: bool) -> None:
    """The grids of ``methods`` on the selection seeds, then the collapsed
    ones again on ``reselect_seed``; a dry run prints them."""
    plan = select_plan(spec, methods)
    if dry_run:
        print(f"[study] {spec['name']} select: {len(plan)} runs")
        print('\n'.join(map(str, plan)))
    else:
        run_plan(spec, plan, False, work_dir, jobs, 'select',
                 records=records)
    if not spec.get('fair_selection') or spec['reselect_seed'] is None:
        return
    again = reselect_plan(spec, methods,
                          collect_results(spec, work_dir, records))
    if dry_run:
        print(f"[study] re-selection: a method whose best val AP50 on seed "
              f"{spec['select_seed']} is below {100 * COLLAPSE_BELOW:g} % "
              f"runs its grid again with seed {spec['reselect_seed']}"
              + (f': {len(again)} runs' if again else
                 ' (none so far)'))
        if again:
            print('\n'.join(map(str, again)))
    elif again:
        run_plan(spec, again, False, work_dir, jobs, 'reselect',
                 records=records)


def main(argv=None) -> Dict[str, str]:
    args = parse_args(argv)
    spec = load_spec(args.spec)
    work_dir = osp.abspath(args.work_dir)
    methods = requested_methods(spec, args.methods)
    records = args.records_dir or osp.join(args.out_dir, 'runs')
    if args.freeze:
        return freeze(spec, args.spec, work_dir, args.out_dir,
                      records=records)
    if spec['select_only'] and args.phase == 'test':
        raise SystemExit(f"{spec['name']} is selection only (select_only = "
                         'True in its spec): it has no test phase')
    # a method with lr_from needs that method's grid
    grid_methods = sorted(
        {spec['methods'][m].get('lr_from', m) for m in methods},
        key=list(spec['methods']).index)
    if not args.report_only:
        if not args.dry_run:  # a dry run writes nothing
            ensure_data(spec)
        if args.phase in ('select', 'all'):
            select_phase(spec, grid_methods, work_dir, records, args.jobs,
                         args.dry_run)
        if args.phase in ('test', 'all') and not spec['select_only']:
            chosen = selected_lrs(spec,
                                  collect_results(spec, work_dir, records))
            # a dry run of a pre-registered study not frozen yet: the plan
            record = read_preregistration(
                spec, args.out_dir, required=False if args.dry_run else None)
            if record is None and spec['preregistered'] and args.dry_run:
                print('[study] the test runs wait for the freeze (--freeze)')
                if args.methods is None:
                    methods = declared_methods(spec)
            if record is not None:
                check_preregistration(spec, chosen, record)
                methods = test_methods(spec, record, args.methods,
                                       args.exploratory)
            if args.dry_run:
                try:
                    plan = test_plan(spec, methods, chosen)
                except RuntimeError as error:  # the selection is not run
                    print(f'[study] test runs follow the selection: {error}')
                    print(f"[study] {spec['name']} test: {len(methods)} "
                          f"methods x {len(spec['seeds'])} seeds = "
                          f"{len(methods) * len(spec['seeds'])} runs")
                else:
                    print(f"[study] {spec['name']} test: {len(plan)} runs")
                    print('\n'.join(map(str, plan)))
            else:
                plan = test_plan(spec, methods, chosen)
                run_plan(spec, plan, True, work_dir, args.jobs, 'test',
                         record and record['settings_sha256'], records)
    if args.dry_run:  # prints the plan, writes nothing
        return {}
    paths = write_report(spec, collect_results(spec, work_dir, records),
                         args.out_dir)
    print(f'[study] report: {paths["md"]}, {paths["csv"]}', flush=True)
    return paths
