"""Which compositions a training set shows, and the length to train at.

* :mod:`~monoidlab.coverage.compositions`: the EC compositions met at every tree node;
* :mod:`~monoidlab.coverage.exact`: exact and sampled coverage of test compositions by
  training lengths; :mod:`~monoidlab.coverage.levels`: the same per tree level;
* :mod:`~monoidlab.coverage.covering`: a training plan that shows every needed composition;
* :mod:`~monoidlab.coverage.min_length`: the support length and the sample size;
  :mod:`~monoidlab.coverage.length_rules`: the measured rules from support length to the length
  to train at.

>>> from monoidlab.coverage.min_length import min_training_length
>>> min_training_length("parity", range(41, 61)).support_length
2
"""
