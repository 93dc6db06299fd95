"""`python -m docfeed ...` (and the `docfeed` console script): runs the bundled CLI."""
import os
import sys


def main() -> None:
    from docfeed import cli_path

    path = cli_path()
    os.execv(path, [path, *sys.argv[1:]])


if __name__ == "__main__":
    main()
