"""``model-index.yml`` and ``configs/**/metafile.yml`` cover every config.

The format is MMDetection's: Collections (Name, Metadata, Paper with URL and
Title, README) and Models (Name, In Collection, Config, Metadata, Results).
``Results`` hold numbers measured in this project only; numbers quoted from
a paper go to ``Paper Results`` with their ``Source``. A ``Results`` entry
is Task, Dataset, Metrics (numbers) and the ``Report`` it copies, with
``Notes`` where needed; those of configs a study trained are generated from
its report (``tools/analysis_tools/evidence_tables.py --write``; checked in
``tests/test_docs/test_one_home.py``).
"""
import filecmp
import os.path as osp
from numbers import Real

import pytest
import yaml
from mmengine.config.utils import _get_cfg_metainfo

from mmdet_rankloss.utils.config import config_files, package_root

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CONFIGS = osp.join(ROOT, 'configs')


def model_configs():
    """Config files (paths from ROOT) that are models: all but the bases."""
    return [
        f'configs/{rel}'
        for rel in config_files(CONFIGS, exts=('.py', ), skip_bases=True)
    ]


def load(path):
    with open(osp.join(ROOT, path), encoding='utf-8') as f:
        return yaml.safe_load(f)


INDEX = load('model-index.yml')
METAFILES = {path: load(path) for path in INDEX['Import']}
MODELS = [(path, model) for path, meta in METAFILES.items()
          for model in meta['Models']]
COLLECTIONS = [(path, c) for path, meta in METAFILES.items()
               for c in meta.get('Collections', [])]


def test_index_imports_every_metafile():
    metafiles = {
        f'configs/{rel}'
        for rel in config_files(CONFIGS, exts=('.yml', ))
        if osp.basename(rel) == 'metafile.yml'
    }
    assert not metafiles - set(INDEX['Import']), 'not imported by ' \
        f'model-index.yml: {sorted(metafiles - set(INDEX["Import"]))}'
    assert sorted(INDEX['Import']) == sorted(metafiles)
    # MMEngine reads the packaged copy: the same file.
    assert filecmp.cmp(
        osp.join(ROOT, 'model-index.yml'),
        osp.join(package_root(), '.mim', 'model-index.yml'),
        shallow=False)


def test_every_config_is_listed_once_and_exists():
    listed = [model['Config'] for _, model in MODELS]
    assert len(listed) == len(set(listed))
    missing = set(model_configs()) - set(listed)
    assert not missing, f'configs in no metafile: {sorted(missing)}'
    assert sorted(listed) == model_configs()
    for path, model in MODELS:
        assert osp.isfile(osp.join(ROOT, model['Config'])), (path, model)
        assert model['Name'] == osp.splitext(osp.basename(
            model['Config']))[0], (path, model)
    names = [model['Name'] for _, model in MODELS]
    assert len(names) == len(set(names))


def test_collections_are_complete():
    names = [c['Name'] for _, c in COLLECTIONS]
    assert len(names) == len(set(names))
    for path, c in COLLECTIONS:
        assert isinstance(c.get('Metadata'), dict), (path, c['Name'])
        assert c['Paper']['URL'].startswith('https://'), (path, c['Name'])
        assert c['Paper']['Title'], (path, c['Name'])
        assert osp.isfile(osp.join(ROOT, c['README'])), (path, c['Name'])
    for path, model in MODELS:
        assert model['In Collection'] in names, (path, model['Name'])
        meta = model['Metadata']
        assert meta['Training Data'] and meta['Epochs'] > 0 and meta[
            'Batch Size'] > 0, (path, model['Name'])


@pytest.mark.parametrize('key', ['Results', 'Paper Results'])
def test_results_are_numbers_with_a_source(key):
    for path, model in MODELS:
        assert set(model) <= {
            'Name', 'In Collection', 'Config', 'Metadata', 'Results',
            'Paper Results'
        }, (path, model['Name'])
        for result in model.get(key, []):
            assert result['Task'] and result['Dataset'], model['Name']
            assert result['Metrics'] and all(
                isinstance(v, Real) and 0 <= v <= 100
                for v in result['Metrics'].values()), model['Name']
            # Paper numbers say where they come from; measured numbers
            # name the report they copy.
            assert ('Source' in result) == (key == 'Paper Results'), (
                model['Name'])
            allowed = {'Task', 'Dataset', 'Metrics'} | (
                {'Source'} if key == 'Paper Results' else
                {'Report', 'Notes'})
            assert set(result) <= allowed, (model['Name'], set(result))
            if key == 'Results':
                assert osp.isfile(osp.join(ROOT, result['Report'])), (
                    model['Name'], result['Report'])
                assert all(isinstance(result[k], str)
                           for k in ('Task', 'Dataset', 'Report')
                           ), model['Name']


def test_mmengine_finds_every_listed_config():
    """MMEngine's own reader of the packaged index (``mmengine.hub``'s
    ``get_config('mmdet_rankloss::...')`` looks configs up through it)."""
    for _, model in MODELS:
        rel = model['Config'].partition('/')[2]
        entry = _get_cfg_metainfo(package_root(), rel)
        assert entry['Config'] == model['Config']
        assert osp.isfile(osp.join(package_root(), '.mim', entry['Config']))
