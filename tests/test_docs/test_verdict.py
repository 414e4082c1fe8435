"""The verdict and its tests (docs/evidence.md), and the README's "which
loss" table drawn from it, are generated from the reports, and say nothing
the reports do not show.

``rankloss_lab.verdict`` builds each bullet from the study records
(``docs/evidence/``); ``tools/analysis_tools/evidence_tables.py`` writes it
into docs/evidence.md (the staleness of every marked table is tested in
``test_evidence_tables.py``). Here: every number of the verdict stands in a
report, every claim carries its strength, the words a non-significant test
must not produce are absent, one pre-registered and one exploratory item
match a hand computation, and the pooled claim refuses to be computed
without its declaration.
"""
import glob
import json
import os.path as osp
import re

import numpy as np
import pytest
from scipy import stats as sps

from rankloss_lab import claims, verdict
from rankloss_lab.results import read_csv

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
EVIDENCE = osp.join(ROOT, 'docs', 'evidence')


def _block(page, name):
    with open(osp.join(ROOT, page), encoding='utf-8') as f:
        text = f.read()
    m = re.search(rf'<!-- evidence-table: {name} -->\n(.*?)<!-- /evidence-'
                  r'table -->', text, re.S)
    assert m, f'{page} has no generated {name}'
    return m.group(1)


def _readme_verdict():
    return _block(verdict.TESTS_PAGE, 'verdict')


def _verdict_tests():
    return _block(verdict.TESTS_PAGE, 'verdict-tests')


def test_readme_verdict_is_the_generated_one():
    assert _readme_verdict() == verdict.verdict_markdown('docs', ROOT)
    assert _verdict_tests() == verdict.verdict_tests_markdown('docs', ROOT)
    assert _block('README.md', 'which-loss') == verdict.choices_markdown(
        '.', ROOT)


def test_which_loss_glosses_its_verdict_bullet():
    """A row's plain words are its bullet's first test's gloss, and the
    row links the tests."""
    rows = [r for r in _block('README.md', 'which-loss').splitlines()[2:]]
    assert len(rows) == len(verdict.CHOICES)
    for row, choice in zip(rows, verdict.CHOICES):
        bullet = verdict.VERDICT[choice['bullet']]
        ev = verdict.evidence(bullet['items'][0], ROOT)
        assert verdict.gloss(ev) in row
        assert f'({verdict.TESTS_PAGE}#{verdict.TESTS_ANCHOR})' in row


def test_readme_verdict_links_to_its_tests():
    with open(osp.join(ROOT, verdict.TESTS_PAGE), encoding='utf-8') as f:
        page = f.read()
    # GitHub's anchor of the heading that holds the tests
    assert '\n## The verdict, test by test\n' in page
    assert verdict.TESTS_ANCHOR == 'the-verdict-test-by-test'
    bullets = [b for b in _readme_verdict().split('\n- ') if b.strip()]
    for bullet, spec in zip(bullets, verdict.VERDICT):
        n = len(spec['items'])
        assert f'[{n} test' in bullet
        assert f'(evidence.md#{verdict.TESTS_ANCHOR})' in bullet


def test_every_pre_registered_test_is_in_the_verdict_or_left_out_why():
    # a claim states all its tests: each pre-registered hypothesis of every
    # report is an item, a test of a pooled claim, or left out with a reason
    declared = {(r['study'], r['id'])
                for path in glob.glob(osp.join(EVIDENCE, '*_comparisons.csv'))
                for r in read_csv(path) if r['family'] == 'pre-registered'}
    items = [i for b in verdict.VERDICT for i in b['items']]
    used = {(i['study'], i['id']) for i in items if i['kind'] == 'hyp'}
    for i in items:
        if i['kind'] == 'pooled':
            with open(osp.join(EVIDENCE, f'pooled_{i["name"]}.json'),
                      encoding='utf-8') as f:
                used |= {(t['study'], t['hypothesis'])
                         for t in json.load(f)['tests']}
    assert used.isdisjoint(verdict.LEFT_OUT)
    assert all(why.strip() for why in verdict.LEFT_OUT.values())
    assert declared == used | set(verdict.LEFT_OUT), (
        declared ^ (used | set(verdict.LEFT_OUT)))


def _which_loss():
    return _block('README.md', 'which-loss')


@pytest.mark.parametrize('block', [_readme_verdict, _verdict_tests,
                                   _which_loss])
def test_every_number_of_the_verdict_is_in_a_report(block):
    assert verdict.check_numbers(block(), ROOT) == []


def test_the_number_check_fails_on_a_number_no_report_shows():
    # above 100: no AP50 difference, no report shows them
    assert verdict.check_numbers('RS gained +197.3 [+191.1, +199.9]',
                                 ROOT) == ['+197.3', '+191.1', '+199.9']


def test_every_bullet_has_a_gloss_and_every_test_scope_and_strength():
    bullets = [b for b in _readme_verdict().split('\n- ') if b.strip()]
    assert len(bullets) == len(verdict.VERDICT)
    assert all('*In short:*' in b for b in bullets)
    strengths = ('confirmed', 'no difference detected', 'exploratory',
                 'pre-registered tests', 'seeds trained')
    items, left_out = _verdict_tests().split(
        '- **Pre-registered tests not in the verdict**\n')
    tests = [t for t in items.splitlines() if t.startswith('  - ')]
    assert all(f'`{s}`' in left_out for s, _ in verdict.LEFT_OUT)
    assert len(tests) == sum(len(b['items']) for b in verdict.VERDICT)
    for line in tests:
        assert '*Scope:*' in line and '[report](evidence/' in line
        assert any(s in line for s in strengths), line[:80]


@pytest.mark.parametrize('word', [r'\btie[sd]?\b', r'\bmatched\b',
                                  r'only loss that trained',
                                  r'beat cross-entropy with every seed'])
def test_no_unlabelled_equivalence_or_known_false_sentence(word):
    for page in ('README.md', verdict.TESTS_PAGE):
        with open(osp.join(ROOT, page), encoding='utf-8') as f:
            assert not re.search(word, f.read(), re.I), page


def _test(study, method):
    rows = read_csv(osp.join(EVIDENCE, f'{study}.csv'))
    return {int(r['seed']): float(r['test_ap50']) for r in rows
            if r['method'] == method and r['selected_lr'] == 'True'
            and r['test_ap50'] != ''}


def test_exploratory_item_matches_a_hand_computation():
    ev = verdict.evidence(verdict.expl('digitsvoc_pretrained_12e', 'rambo',
                                       'ce_lr004', 'RaMBO vs CE'), ROOT)
    a, b = _test('digitsvoc_pretrained_12e', 'rambo'), _test(
        'digitsvoc_pretrained_12e', 'ce_lr004')
    d = np.array([a[s] - b[s] for s in sorted(a)])
    half = sps.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    assert ev['strength'] == 'exploratory'
    assert ev['mean'] == pytest.approx(d.mean())
    assert ev['low'] == pytest.approx(d.mean() - half)
    assert f'{100 * d.mean():+.1f} [{100 * (d.mean() - half):+.1f}' in \
        ev['text']


def test_hypothesis_item_reads_the_pre_registered_row():
    ev = verdict.evidence(verdict.hyp('digitsvoc_rank_sort_frcnn_16e', 'H1',
                                      'RS vs CE'), ROOT)
    # -3.1 [-6.9, +0.6], Holm p 0.15: not confirmed, never called a tie;
    # RS at score_thr 0 against CE at 0.05: no gain either way
    assert ev['strength'] == 'unequal thresholds'
    assert 'no difference detected' in ev['text'] and '-3.1' in ev['text']
    assert verdict.UNEQUAL in ev['text']


def test_collapsed_seeds_are_counted_beside_a_comparison():
    ev = verdict.evidence(verdict.hyp(
        'digitsvoc_dense_retinanet_rank_sort_16e', 'H3',
        'logits mix vs focal'), ROOT)
    assert 'logits mix 2 of 5' in ev['text']
    assert 'focal 0 of 5' in ev['text']


def test_a_hypothesis_on_an_extra_metric_reads_its_own_column(tmp_path):
    """A Mask R-CNN study's mask AP50 hypothesis counts the collapsed seeds
    of the mask column, not of box AP50 (the study's main column)."""
    segm = 'coco/segm_mAP_50'
    ev_dir = tmp_path / 'docs' / 'evidence'
    ev_dir.mkdir(parents=True)
    box = {'ce': [0.40, 0.41, 0.42, 0.43, 0.44],
           'rs': [0.45, 0.44, 0.47, 0.46, 0.48]}
    mask = {'ce': [0.0, 0.39, 0.0, 0.40, 0.41],
            'rs': [0.43, 0.42, 0.45, 0.44, 0.46]}
    lines = [f'study,method,lr,seed,selected_lr,test_ap50,test_{segm}']
    for m in ('ce', 'rs'):
        lines += [f'mask,{m},0.02,{6 + i},True,{box[m][i]},{mask[m][i]}'
                  for i in range(5)]
    (ev_dir / 'mask.csv').write_text('\n'.join(lines) + '\n')
    head = ('study,family,id,method,baseline,alternative,metric,n,seeds,'
            'mean_diff,ci95_low,ci95_high,m,bonferroni_level,bonferroni_low,'
            'bonferroni_high,p,p_holm,significant_holm')
    rest = ('rs,ce,two-sided,{},5,6 7 8 9 10,0.04,0.02,0.06,2,0.975,0.01,'
            '0.07,0.001,0.002,True')
    (ev_dir / 'mask_comparisons.csv').write_text('\n'.join([
        head, 'mask,pre-registered,H1,' + rest.format('coco/bbox_mAP_50'),
        'mask,pre-registered,H2,' + rest.format(segm)]) + '\n')
    on_box = verdict.evidence(verdict.hyp('mask', 'H1', 'RS vs CE'),
                              str(tmp_path))
    on_mask = verdict.evidence(verdict.hyp('mask', 'H2', 'RS vs CE'),
                               str(tmp_path))
    assert 'seeds trained' not in on_box['text'] and not on_box['bimodal']
    assert 'CE 3 of 5 seeds trained' in on_mask['text']
    assert on_mask['bimodal'] and 'no interval: bimodal' in on_mask['text']


def _claim_pairs():
    """Per test of the claim: the (method, baseline) test values per seed."""
    out = []
    for t in claims.CLAIMS['mix_vs_ce']['tests']:
        row = [r for r in read_csv(
                   osp.join(EVIDENCE, f'{t["study"]}_comparisons.csv'))
               if r['family'] == 'pre-registered'
               and r['id'] == t['hypothesis']][0]
        m, b = _test(t['study'], row['method']), _test(t['study'],
                                                       row['baseline'])
        out.append((t, [(m[int(s)], b[int(s)]) for s in row['seeds'].split()]))
    return out


def _t_interval(d):
    half = sps.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    return d.mean() - half, d.mean() + half


def test_pooled_claim_matches_a_hand_computation():
    with open(osp.join(EVIDENCE, 'pooled_mix_vs_ce_declaration.json'),
              encoding='utf-8') as f:
        record = json.load(f)
    added = [t for a in record['amendments'] for t in a['added']]
    result = claims.pooled_claim('mix_vs_ce')
    tests = _claim_pairs()
    # pre-registered: the tests of the declaration, before any amendment
    d = np.array([m - b for t, pairs in tests if t not in added
                  for m, b in pairs])
    assert result['pooled']['n'] == len(d) == 15
    assert result['pooled']['mean'] == pytest.approx(d.mean())
    assert result['pooled']['high'] == pytest.approx(_t_interval(d)[1])
    pos = int((d > 0).sum())
    assert result['pooled']['positive'] == pos
    assert result['pooled']['sign_p'] == pytest.approx(
        sps.binomtest(pos, int((d != 0).sum())).pvalue)
    # exploratory: with the amendment's test
    d_all = np.array([m - b for _, pairs in tests for m, b in pairs])
    assert result['amended']['n'] == 20
    assert result['amended']['low'] == pytest.approx(_t_interval(d_all)[0])
    # robust: the pairs in which a side collapsed (< 1 AP50 point) left out
    kept = [[m - b for m, b in pairs if min(m, b) >= 0.01]
            for _, pairs in tests]
    flat = np.array([x for g in kept for x in g])
    robust = result['robust']['without_collapsed']
    assert len(result['collapsed']) == 20 - len(flat) == 2
    assert robust['mean'] == pytest.approx(flat.mean())
    assert robust['low'] == pytest.approx(_t_interval(flat)[0])
    assert result['confirmed'] == 1


def test_random_effects_pool_matches_a_hand_computation():
    groups = [[0.1, 0.3, 0.2], [0.5, 0.4, 0.9, 0.6], [0.0, -0.2, 0.1]]
    means = np.array([np.mean(g) for g in groups])
    v = np.array([np.var(g, ddof=1) / len(g) for g in groups])
    w = 1 / v
    fixed = (w * means).sum() / w.sum()
    q = (w * (means - fixed)**2).sum()
    tau2 = max(0, (q - 2) / (w.sum() - (w**2).sum() / w.sum()))
    ws = 1 / (v + tau2)
    mean = (ws * means).sum() / ws.sum()
    se = np.sqrt((ws * (means - mean)**2).sum() / (2 * ws.sum()))
    out = claims.random_effects(groups)
    assert tau2 > 0 and out['tau2'] == pytest.approx(tau2)
    assert out['mean'] == pytest.approx(mean)
    assert out['high'] == pytest.approx(mean + sps.t.ppf(0.975, 2) * se)


def test_the_verdict_gives_no_interval_where_a_side_is_bimodal():
    ev = verdict.evidence(verdict.hyp('digitsvoc_dense_fixed_16e', 'H6',
                                      'logits mix vs focal'), ROOT)
    assert ev['bimodal'] and 'no interval: bimodal' in ev['text']
    assert '[' not in ev['text']


def test_no_difference_detected_stands_beside_an_interval_holding_zero():
    for bullet in verdict.VERDICT:
        for item in bullet['items']:
            if item['kind'] != 'hyp':
                continue
            ev = verdict.evidence(item, ROOT)
            if ev['strength'] == 'not detected' and not ev['bimodal']:
                assert ev['low'] <= 0 <= ev['high'], ev['text']


def test_pooled_claim_refuses_without_or_against_its_declaration(tmp_path):
    with pytest.raises(claims.ClaimError, match='--freeze mix_vs_ce'):
        claims.read_claim_record('mix_vs_ce', str(tmp_path))
    claims.freeze_claim('mix_vs_ce', str(tmp_path), now='2000-01-01')
    with pytest.raises(claims.ClaimError, match='declared once'):
        claims.freeze_claim('mix_vs_ce', str(tmp_path))
    path = tmp_path / 'pooled_mix_vs_ce_declaration.json'
    record = json.loads(path.read_text())
    record['tests'] = record['tests'][:2]  # a test left out afterwards
    path.write_text(json.dumps(record))
    with pytest.raises(claims.ClaimError, match='tests'):
        claims.read_claim_record('mix_vs_ce', str(tmp_path))


def test_an_amendment_only_adds_tests_and_says_why(tmp_path, monkeypatch):
    first = [dict(study='a', hypothesis='H1')]
    claim = dict(claim='x', tests=list(first), method='seed_pooled_t')
    monkeypatch.setitem(claims.CLAIMS, 'c', claim)
    ev = str(tmp_path)
    with pytest.raises(claims.ClaimError, match='--freeze c'):
        claims.amend_claim('c', 'why', ev)
    claims.freeze_claim('c', ev, now='2000-01-01')
    with pytest.raises(claims.ClaimError, match='already lists'):
        claims.amend_claim('c', 'why', ev)
    claim['tests'] = first + [dict(study='b', hypothesis='H2')]
    with pytest.raises(claims.ClaimError, match='why'):
        claims.amend_claim('c', ' ', ev)
    claims.amend_claim('c', 'b tested it too', ev, now='2000-01-02')
    record = claims.read_claim_record('c', ev)
    assert record['frozen_at'] == '2000-01-01'
    assert record['tests'] == claim['tests']
    assert record['amendments'] == [dict(
        at='2000-01-02', added=[dict(study='b', hypothesis='H2')],
        why='b tested it too')]
    claim['tests'] = [dict(study='b', hypothesis='H2')]  # 'a' dropped
    with pytest.raises(claims.ClaimError, match='never removed'):
        claims.amend_claim('c', 'why', ev)
    claim['tests'] = first + [dict(study='b', hypothesis='H2'),
                              dict(study='d', hypothesis='H1')]
    claim['method'] = 'other'
    monkeypatch.setitem(claims.METHODS, 'other', 'another pooling')
    with pytest.raises(claims.ClaimError, match='declared once'):
        claims.amend_claim('c', 'why', ev)


def test_pooled_declaration_precedes_its_report():
    with open(osp.join(EVIDENCE, 'pooled_mix_vs_ce_declaration.json'),
              encoding='utf-8') as f:
        record = json.load(f)
    with open(osp.join(EVIDENCE, 'pooled_mix_vs_ce.md'),
              encoding='utf-8') as f:
        report = f.read()
    assert record['frozen_at'] in report
    assert record['method_text'] in report
    for a in record.get('amendments', []):
        assert f'Amended {a["at"]}' in report and a['why'] in report
