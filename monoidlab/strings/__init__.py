"""Strings and trees: the samplers, near-miss strings and the log-depth tree schedules.

* :mod:`~monoidlab.strings.sampling`: ``sample`` (uniform, balanced, EC-stratified, near-miss
  strings of given lengths) and ``length_batches``;
* :mod:`~monoidlab.strings.near_miss`: strings one edit away from the other class;
* :mod:`~monoidlab.strings.schedules`: which leaves every tree node of a model covers.

>>> from monoidlab.strings.sampling import sample
>>> sample("parity", [8], 4, seed=0).tokens.shape
(4, 8)
"""
