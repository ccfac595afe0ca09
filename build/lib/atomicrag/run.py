"""``python -m atomicrag.run``: the research harness's command (Hydra), kept at the package top so
the command stays short. Everything it runs lives in :mod:`atomicrag.harness.run`."""
from atomicrag.harness.run import main

if __name__ == "__main__":
    main()
