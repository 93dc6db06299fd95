"""docfeed: Donut document-image datasets packed into checksummed Arrow shards, and a PyTorch loader.

    import docfeed
    loader = docfeed.Loader("invoices.docfeed", batch_size=8, image_size=(1553, 1200))
    for batch in loader:   # {"pixel_values": (8, 3, 1553, 1200) float32, "labels": (8, L) int64}
        ...

docfeed.hf has the Hugging Face Trainer integration; docfeed.pack packs an in-memory dataset.
Errors are docfeed.Error subclasses (docfeed.errors), each also the matching built-in exception.
"""
from docfeed.errors import (AlreadyExistsError, CancelledError, DataError, Error,
                            FailedPreconditionError, InternalError, InvalidArgumentError,
                            LoaderClosedError, NotFoundError, ResourceExhaustedError,
                            StorageError)
from docfeed._docfeed import normalize_table as _normalize_table  # noqa: F401,E402
from docfeed._docfeed import remote_stats  # noqa: E402  (s3:// and http(s):// reads so far)
from docfeed.loader import Batch, Loader  # noqa: E402
from docfeed.pack import DecodeWarning, merge, pack  # noqa: E402

__all__ = ["Batch", "Loader", "pack", "merge", "DecodeWarning", "cli_path", "Error", "InvalidArgumentError",
           "NotFoundError", "DataError", "StorageError", "ResourceExhaustedError",
           "CancelledError", "InternalError", "AlreadyExistsError", "FailedPreconditionError",
           "LoaderClosedError", "remote_stats"]
__version__ = "0.1.0"


def cli_path() -> str:
    """The path of the bundled `docfeed` command-line tool."""
    import os
    import pathlib

    override = os.environ.get("DOCFEED_CLI")  # e.g. a development build's build/bin/docfeed
    path = pathlib.Path(override) if override else pathlib.Path(__file__).parent / "bin" / "docfeed"
    if not path.exists():
        raise FileNotFoundError(f"{path}: this docfeed build has no CLI")
    return str(path)
