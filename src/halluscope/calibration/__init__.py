"""The instrument's own accuracy: known-truth sets (simulated models, perturbed answers), hand-labelled real
answers (Tri-HE, MMHal-Bench) and ``validate-judge``, which measures a judge against them.

Apart from ``quality`` (HQM), which rates a benchmark; this package rates halluscope's own judges and readers.
"""
