"""The library face: ``AtomicRAG`` (index, update, query), save/load and storage backends, the
``atomicrag`` command line, exports and model adapters. It never imports the research harness."""
