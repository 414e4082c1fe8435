"""The project's own measurements: the scripts behind numbers and figures of
the docs that a user of the library does not need (the tools a user runs
are in ``tools/``). Each runs from the root of a checkout as a module::

    python -m rankloss_lab.analysis.long_run --iters 2000 --out run2000.json

* ``score_space_density``: RaMBO on logits, sigmoid and softmax scores of a
  detection head (docs/detection.md);
* ``plot_loss_landscape``: ``1 - AP`` and its interpolation along a line
  (docs/detection.md);
* ``dense_grad_scale``: the size of RaMBO's gradient on a dense head next to
  focal's (docs/dense.md);
* ``dense_step_share``, ``rambo_step_share``: the rank loss's share of a
  training step;
* ``input_checks_cost``: the cost of the input checks
  (docs/reliability.md);
* ``long_run``: memory and step time over a long run (docs/reliability.md);
* ``budget``: the epochs of a confirmation, from a budget study's val
  curves (docs/evidence.md).
"""
