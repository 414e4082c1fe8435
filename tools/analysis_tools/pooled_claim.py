#!/usr/bin/env python
"""A claim tested by several pre-registered studies: k of n confirmed and
one pooled estimate (:mod:`rankloss_lab.claims`).

    python tools/analysis_tools/pooled_claim.py --freeze mix_vs_ce
    python tools/analysis_tools/pooled_claim.py --amend mix_vs_ce --why TEXT
    python tools/analysis_tools/pooled_claim.py mix_vs_ce
"""
import argparse
import sys

from rankloss_lab import claims


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('claim', choices=sorted(claims.CLAIMS))
    parser.add_argument('--freeze', action='store_true',
                        help='declare the pooling method (once, before '
                        'computing)')
    parser.add_argument('--amend', action='store_true',
                        help='add the tests of the claim that its record '
                        'lacks (a later pre-registered test)')
    parser.add_argument('--why', default='',
                        help='with --amend: why the test is added')
    args = parser.parse_args(argv)
    try:
        if args.amend:
            path = claims.amend_claim(args.claim, args.why)
            print(f'pooled_claim: amended {path}')
            return 0
        if args.freeze:
            print(f'pooled_claim: wrote {claims.freeze_claim(args.claim)}')
            return 0
        result = claims.write_claim(args.claim)
    except claims.ClaimError as e:
        print(f'pooled_claim: {e}', file=sys.stderr)
        return 2
    print(claims.claim_markdown(result))
    return 0


if __name__ == '__main__':
    sys.exit(main())
