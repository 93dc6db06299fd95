"""`python -m docfeed ...` (and the `docfeed` console script): runs the bundled CLI, except
`doctor`, which is Python (the docfeed.doctor package)."""
import os
import sys


def main() -> None:
    if sys.argv[1:2] == ["doctor"]:
        from docfeed import doctor

        sys.exit(doctor.main(sys.argv[2:]))
    from docfeed import cli_path

    path = cli_path()
    os.execv(path, [path, *sys.argv[1:]])


if __name__ == "__main__":
    main()
