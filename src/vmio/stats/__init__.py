"""Arithmetic every layer may use: fio's latency histograms (merge, percentiles) and spreads over repetitions."""
