"""Prediction without running: a site's profile (a few physical parameters, fitted from its
calibration and payload sections or written by hand) and a recorded trace give a job's wall
time, CPU efficiency and where its time goes, with no site up (``instore predict``).

Modules, one concern each: ``profile`` (the profile and its file), ``fit`` (fitting one from a
site's results), ``model`` (the discrete-event model over a trace's requests), ``validate``
(predicted against measured), ``command`` (the CLI). Imports go down only: this package reads
the trace and record modules; nothing below imports it.
"""
