"""HQM: the quality of a hallucination benchmark itself (reliability, validity, coverage, response bias) from
runs of several models. The instrument's own accuracy lives in :mod:`halluscope.calibration`."""
