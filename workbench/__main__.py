import sys

from workbench.cli import main

main(sys.argv[1:])
