"""The README as a user guide: its losses table is the package's
``mmdet_rankloss.losses.__all__``, its plain-PyTorch snippet prints what the
README says it prints, its "which loss" table has a row per detector family,
and each config folder it links has its generated README.

The MMDetection snippet is a whole config (``_base_`` and
``custom_imports``): ``test_doc_snippets.py`` builds it. The "which loss"
table and the config folders' READMEs are generated
(``tools/analysis_tools/evidence_tables.py --write``); that they are not
stale is tested in ``test_evidence_tables.py``.
"""
import os
import os.path as osp
import re
import subprocess
import sys

import pytest

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
BLOCK = re.compile(r'```python\n(.*?)```', re.S)
NAME = re.compile(r'`(\w+)`')


def _readme():
    with open(osp.join(ROOT, 'README.md'), encoding='utf-8') as f:
        return f.read()


def _section(heading):
    text = _readme()
    assert f'\n## {heading}\n' in text, f'README.md has no "## {heading}"'
    return text.split(f'\n## {heading}\n', 1)[1].split('\n## ', 1)[0]


def _table(section):
    """The rows (dicts by header) of the first table of a section."""
    lines = [line for line in section.splitlines() if line.startswith('|')]
    cells = [[c.strip() for c in line.strip().strip('|').split('|')]
             for line in lines]
    header, rows = cells[0], cells[2:]
    assert all(len(r) == len(header) for r in rows), header
    return [dict(zip(header, r)) for r in rows]


def losses_table():
    return _table(_section('Losses'))


def test_the_losses_table_names_what_the_package_exports():
    """Every module and function of ``mmdet_rankloss.losses.__all__`` is in
    the table, and the table names nothing else in those columns."""
    from mmdet_rankloss import losses
    rows = losses_table()
    named = [n for r in rows for col in ('function', 'module')
             for n in NAME.findall(r[col])]
    assert len(named) == len(set(named)), 'a name is in two rows'
    exported = set(losses.__all__)
    assert set(named) == exported, (
        f'in __all__, not in the table: {sorted(exported - set(named))}; '
        f'in the table, not in __all__: {sorted(set(named) - exported)}')
    for r in rows:
        for n in NAME.findall(r['function']):
            assert callable(getattr(losses, n)) and \
                not isinstance(getattr(losses, n), type), n
        for n in NAME.findall(r['module']):
            assert isinstance(getattr(losses, n), type), n


def test_each_loss_has_a_paper_a_task_and_its_registry():
    from mmdet_rankloss.optional_mmdet import HOOKS, MODELS
    registries = dict(MODELS=MODELS, HOOKS=HOOKS)
    for r in losses_table():
        assert r['task'] in ('detection', 'retrieval', 'both'), r['loss']
        given = NAME.findall(r['registry'])
        assert set(given) <= set(registries), r['loss']
        for n in NAME.findall(r['module']):
            # a registered module is in the registry the row names
            where = [k for k, reg in registries.items()
                     if reg.get(n) is not None]
            assert set(where) <= set(given), (n, where, given)
        if given:
            assert r['paper'] and r['what it needs'], r['loss']


def test_the_readme_names_eight_papers_and_the_table_links_them():
    papers = {link for r in losses_table()
              for link in re.findall(r'\]\((https?://[^)]+)\)', r['paper'])}
    # the eight papers and the triplet baseline's
    assert len(papers) == 9, papers


def plain_pytorch():
    """The snippet after "**Plain PyTorch.**" and what the README says it
    prints."""
    text = _readme()
    start = text.index('**Plain PyTorch.**')
    lead, code = text[start:].split('```python\n', 1)
    printed = re.findall(r'`((?:AP|Recall@1) [\d.]+ -> [\d.]+)`', lead)
    return BLOCK.search(text, start).group(1), printed


def test_the_plain_pytorch_snippet_prints_what_the_readme_says():
    """Run as written, in a fresh process: it prints the README's lines,
    and the trained models rank better than before training."""
    code, printed = plain_pytorch()
    assert len(printed) == 2, printed
    env = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS='1')
    proc = subprocess.run([sys.executable, '-c', code], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == printed, proc.stdout
    for line in printed:
        before, after = map(float, re.findall(r'[\d.]+(?= |$)', line)[-2:])
        assert after > before + 0.1, line


def test_which_loss_names_every_detector_family():
    rows = _table(_section('Which loss for which detector'))
    families = [r['detector'] for r in rows]
    for family in ('Faster R-CNN', 'Mask R-CNN', 'RetinaNet', 'ATSS', 'FCOS',
                   'retrieval'):
        assert sum(f.startswith(family) for f in families) == 1, family
    for r in rows:
        config = re.search(r'\]\(([^)]+\.py)\)', r['config']).group(1)
        assert osp.isfile(osp.join(ROOT, config)), config
        assert 'docs/evidence.md#' in r['evidence, in plain words']


def test_each_config_folder_has_its_readme_and_the_readme_links_it():
    """As in MMDetection: a folder's README.md is the ``README`` of each
    collection of its metafile."""
    import yaml

    from rankloss_lab import metafile_results as MR
    readme = _readme()
    for rel in MR.metafile_paths(ROOT):
        folder_readme = osp.join(osp.dirname(rel), 'README.md')
        assert osp.isfile(osp.join(ROOT, folder_readme)), folder_readme
        assert f']({folder_readme})' in readme, folder_readme
        with open(osp.join(ROOT, rel), encoding='utf-8') as f:
            collections = yaml.safe_load(f).get('Collections') or []
        assert collections and all(
            c['README'] == folder_readme for c in collections), rel


@pytest.mark.parametrize('term', ['DigitsVOC', 'R18-w32', 'the mix',
                                  'twin'])
def test_a_term_is_defined_where_it_first_appears(term):
    """The first mention of a term in the README's prose (after the
    picture's caption) is its definition: in bold, or with a colon or a
    parenthesis right after it."""
    text = _readme().split('\n## Install\n', 1)[1]
    prose = re.sub(r'```.*?```', '', text, flags=re.S)
    at = prose.index(term)
    around = prose[max(0, at - 2):at + len(term) + 4]
    assert ('**' in around or re.search(re.escape(term) + r's?\*?\*?[:(, ]',
                                        around)), around
