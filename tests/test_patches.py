"""What ``import mmdet_rankloss`` changes in MMEngine, and the switches.

Each check runs in a fresh subprocess: it records the identity of the
MMEngine / MMDetection / torch objects a plugin could replace, imports the
package, and compares (``mmdet_rankloss/patches.py``,
``docs/architecture.md``).
"""
import json
import os
import os.path as osp
import subprocess
import sys
import textwrap

import pytest
import torch

from mmdet_rankloss import patches

ROOT = osp.dirname(osp.dirname(osp.abspath(__file__)))
HAS_SAFE_GLOBALS = hasattr(torch.serialization, 'safe_globals')

# snapshot() -> {name: id of the object now}; `before` is taken before
# anything of mmdet_rankloss is imported.
PRELUDE = textwrap.dedent('''
    import json, sys
    import torch
    import mmengine.config.config as config_module
    import mmengine.config.utils as config_utils
    import mmengine.fileio.backends as backends
    import mmengine.runner as runner_pkg
    import mmengine.runner.checkpoint as checkpoint_module
    import mmengine.runner.runner as runner_module
    import mmengine.utils.package_utils as package_utils
    import mmengine.registry
    import mmdet.registry

    def registries():
        found, todo = {}, [('mmengine', mmengine.registry.MODELS)]
        while todo:
            path, registry = todo.pop()
            found[path] = registry
            todo += [(path + '.' + k, v)
                     for k, v in registry._children.items()]
        return found

    def snapshot():
        objects = {
            'LocalBackend.put': backends.LocalBackend.put,
            'LocalBackend.get': backends.LocalBackend.get,
            'checkpoint.save_checkpoint': checkpoint_module.save_checkpoint,
            'runner.save_checkpoint': runner_module.save_checkpoint,
            'mmengine.runner.save_checkpoint': runner_pkg.save_checkpoint,
            'CheckpointLoader.local': checkpoint_module.CheckpointLoader.
            _schemes[''],
            'CheckpointLoader.load_checkpoint': vars(
                checkpoint_module.CheckpointLoader)['load_checkpoint'],
            'config.get_installed_path': config_module.get_installed_path,
            'package_utils.get_installed_path':
            package_utils.get_installed_path,
            'Runner.save_checkpoint': runner_module.Runner.save_checkpoint,
            'torch.load': torch.load,
            'torch.save': torch.save,
            'torch.cuda.set_device': torch.cuda.set_device,
        }
        for path, registry in registries().items():
            objects['build_func:' + path] = registry.build_func
        ids = {k: id(v) for k, v in objects.items()}
        ids['MODULE2PACKAGE'] = sorted(config_utils.MODULE2PACKAGE.items())
        return ids, objects

    def changed(before, after):
        return sorted(k for k in before if k in after and
                      before[k] != after[k])

    before, originals = snapshot()
''')


def run(body, env=None):
    """Runs PRELUDE + body in a fresh interpreter; returns its last JSON
    line."""
    full = dict(os.environ)
    full['PYTHONPATH'] = ROOT + os.pathsep + full.get('PYTHONPATH', '')
    full.update(env or {})
    proc = subprocess.run([sys.executable, '-c', PRELUDE + body],
                          env=full, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


IMPORT = textwrap.dedent('''
    import mmdet_rankloss
    after, _ = snapshot()
    print(json.dumps(dict(
        changed=changed(before, after),
        added=sorted(set(map(tuple, after['MODULE2PACKAGE'])) -
                     set(map(tuple, before['MODULE2PACKAGE']))),
        enabled={n: mmdet_rankloss.patches.enabled(n)
                 for n in mmdet_rankloss.patches.PATCHES})))
''')


def head_fit_keys(changed):
    return [k for k in changed if k.startswith('build_func:')]


@pytest.mark.slow
def test_import_changes_only_the_config_scope():
    """``import mmdet_rankloss`` registers its modules and its config scope
    (one ``MODULE2PACKAGE`` entry, no function replaced) and nothing else:
    every write, checkpoint loading and saving, ``build_func``, config path
    lookup and torch stay MMEngine's / torch's own objects."""
    report = run(IMPORT)
    assert report['added'] == [['mmdet_rankloss', 'mmdet_rankloss.registry']]
    assert report['changed'] == ['MODULE2PACKAGE']
    assert report['enabled'] == dict(
        config_scope=True, checkpoint_loader=False, head_fit_check=False,
        atomic_checkpoints=False)


@pytest.mark.slow
def test_apply_patches_is_the_opt_in_for_mmdetections_own_scripts():
    """``custom_imports=dict(imports=['mmdet_rankloss',
    'mmdet_rankloss.apply_patches'])`` applies every patch."""
    report = run(IMPORT.replace('import mmdet_rankloss\n',
                                'import mmdet_rankloss.apply_patches\n'))
    changed = report['changed']
    assert {'build_func:mmengine', 'build_func:mmengine.mmdet'} <= set(
        head_fit_keys(changed))
    assert {'MODULE2PACKAGE', 'runner.save_checkpoint'} <= set(changed)
    assert 'LocalBackend.put' not in changed and 'torch.load' not in changed
    assert report['enabled'] == dict(
        config_scope=True, checkpoint_loader=HAS_SAFE_GLOBALS,
        head_fit_check=True, atomic_checkpoints=True)


SWITCHES = textwrap.dedent('''
    from mmdet_rankloss import patches
    steps = {}
    patches.disable_all()  # from MMEngine's own state
    before, originals = snapshot()
    patches.enable_all()
    steps['enable_all'] = changed(before, snapshot()[0])
    for name in patches.PATCHES:
        patches.disable(name)
        steps['disable ' + name] = changed(before, snapshot()[0])
        assert not patches.enabled(name), name
    patches.disable_all()  # idempotent
    steps['disable_all'] = changed(before, snapshot()[0])
    _, now = snapshot()
    same = all(now[k] is originals[k] for k in originals if k in now)
    # each switch on its own: what it changes, and back
    alone = {}
    for name in patches.PATCHES:
        patches.enable(name)
        patches.enable(name)  # idempotent
        alone[name] = changed(before, snapshot()[0])
        patches.disable(name)
        alone[name + ' restored'] = changed(before, snapshot()[0])
    print(json.dumps(dict(steps=steps, same=same, alone=alone)))
''')


@pytest.mark.slow
def test_each_switch_restores_mmengines_own_objects():
    report = run(SWITCHES)
    steps, alone = report['steps'], report['alone']
    assert 'LocalBackend.put' not in steps['enable_all']
    assert 'runner.save_checkpoint' in steps['enable_all']
    assert 'MODULE2PACKAGE' not in steps['disable config_scope']
    assert 'CheckpointLoader.local' not in steps['disable checkpoint_loader']
    assert head_fit_keys(steps['disable head_fit_check']) == []
    assert steps['disable atomic_checkpoints'] == []
    assert steps['disable_all'] == [] and report['same']
    assert alone['config_scope'] == ['MODULE2PACKAGE']
    if HAS_SAFE_GLOBALS:
        assert alone['checkpoint_loader'] == ['CheckpointLoader.local']
    assert alone['head_fit_check'] == head_fit_keys(alone['head_fit_check'])
    assert alone['head_fit_check']
    assert alone['atomic_checkpoints'] == [
        'checkpoint.save_checkpoint', 'mmengine.runner.save_checkpoint',
        'runner.save_checkpoint'
    ]
    for name in patches.PATCHES:
        assert alone[name + ' restored'] == [], name


def test_unknown_patch_name():
    with pytest.raises(KeyError, match="no patch 'atomic'"):
        patches.enable('atomic')


ATOMIC = textwrap.dedent('''
    import os, sys
    from mmengine.fileio import get_file_backend
    from mmengine.runner.checkpoint import save_checkpoint
    from mmdet_rankloss import patches
    work = sys.argv[1]
    replaced = []
    replace = os.replace
    def recording_replace(src, dst):
        replaced.append((os.path.basename(src), os.path.basename(dst)))
        replace(src, dst)
    os.replace = recording_replace
    patches.enable('atomic_checkpoints')
    import mmengine.runner.runner as runner_module
    runner_module.save_checkpoint(dict(w=torch.ones(2)),
                                  os.path.join(work, 'sub', 'a.pth'))
    get_file_backend(work).put(b'x', os.path.join(work, 'b.bin'))
    patches.disable('atomic_checkpoints')
    runner_module.save_checkpoint(dict(w=torch.ones(2)),
                                  os.path.join(work, 'c.pth'))
    loaded = torch.load(os.path.join(work, 'sub', 'a.pth'))
    print(json.dumps(dict(replaced=replaced,
                          listing=sorted(os.listdir(work)),
                          sub=sorted(os.listdir(os.path.join(work, 'sub'))),
                          w=loaded['w'].tolist())))
''')


@pytest.mark.slow
def test_atomic_checkpoints_cover_checkpoints_only(tmp_path):
    """A checkpoint goes through a temporary file renamed into place; any
    other local write (``LocalBackend.put``) and, once disabled, the
    checkpoints too are written directly."""
    report = run(ATOMIC.replace('sys.argv[1]', repr(str(tmp_path))))
    pid_tmp = report['replaced'][0][0]
    assert report['replaced'] == [[pid_tmp, 'a.pth']]
    assert pid_tmp.startswith('a.pth.tmp-')
    assert report['sub'] == ['a.pth'] and report['w'] == [1.0, 1.0]
    assert report['listing'] == ['b.bin', 'c.pth', 'sub']
