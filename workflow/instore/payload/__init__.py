"""The measuring payload: one job reads one file and reports a run record.

The package itself imports nothing: ``instore warm`` must set its environment before numpy,
pandas and ROOT are loaded. Callers import ``instore.payload.runner`` (``ReadOptions``,
``run_read``) and ``instore.payload.pattern`` (``Pattern``).
"""
