"""The research face: the Hydra entry point, the run pipeline, run folders and tracking, baseline
rows, and the paper tables. It never imports the library face (``atomicrag.library``)."""
