"""The experiments' part of the report: their results tables' schemas
(:mod:`~aria_tda_experiments.report.specs`, entry-point group ``aria_tda.tables``) and the
report sections that show them (:mod:`~aria_tda_experiments.report.sections`, entry-point group
``aria_tda.report_sections``): planted influence, planted aspects and TRAK sensitivity.

The library names none of them; while this package is installed the report finds them.
"""
