"""Record a real analysis job's XRootD reads once; replay them closed-loop on any storage.

``trace`` (the trace format: XRootD's recorder CSV plus the job's times and provenance;
parsing, validation, credential stripping, think times), ``record_cmd`` (`instore record`),
``targets`` (where a trace's files are on the storage replayed against), ``streams`` (a
multi-threaded job's streams, told apart), ``closed_loop`` and ``passes`` (the replayer, its
streams side by side, through the payload's own sources), ``xrdreplay`` (Debian's open-loop
replayer run beside it), ``result`` (the replay's run record) and ``command`` (the CLI).
"""
