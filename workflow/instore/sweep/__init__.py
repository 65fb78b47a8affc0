"""Sweeps: a section's grid of points measured on a site, jobs placed on Dask workers.

Import the module you need (``instore.sweep.runner``, ``instore.sweep.store`` ...): this
package imports nothing itself, so a report that reads records through ``store`` does not load
Dask, the payloads and the engines on the way."""
