"""``python -m atomicrag.run``: the research harness's command (Hydra), kept at the package top so
the command stays short. Everything it runs lives in :mod:`atomicrag.harness.run`."""
import sys

from atomicrag.core.config_moves import move_override
from atomicrag.harness.run import main

if __name__ == "__main__":
    sys.argv[1:] = [move_override(a) for a in sys.argv[1:]]  # a moved switch's old spelling still runs
    main()
