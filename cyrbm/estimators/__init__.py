"""Measuring models: AIS and ratio AIS, RAISE and the sandwich, the DBN
variational bound, the Chib-style estimator and per-vector AIS, results.
"""
