"""Replayed evaluation, calibration fits and ranking-metric studies."""
