import sys

from vmio.cli import main

sys.exit(main())
