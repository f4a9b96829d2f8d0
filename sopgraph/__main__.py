import sys

from sopgraph.cli import main

sys.exit(main())
