"""docfeed's exceptions: one class per C++ StatusCode (include/docfeed/status.h).

Every error docfeed raises is a docfeed.Error, and each class also derives from the built-in
exception a caller would already catch for that kind of failure, so `except ValueError` or
`except FileNotFoundError` keeps working:

    StatusCode           class                      also a
    kInvalidArgument     InvalidArgumentError       ValueError
    kNotFound            NotFoundError              FileNotFoundError
    kCorruption          DataError                  ValueError
    kUnsupported         DataError                  ValueError
    kIOError             StorageError               OSError
    kResourceExhausted   ResourceExhaustedError     RuntimeError
    kCancelled           CancelledError             RuntimeError
    kInternal            InternalError              RuntimeError
    kAlreadyExists       AlreadyExistsError         FileExistsError
    kFailedPrecondition  FailedPreconditionError    RuntimeError
    (closed loader)      LoaderClosedError          RuntimeError

The extension (python/src/docfeed_ext.cc) chooses the class from the status code alone, never
from the message; `.code` is the code's name ("Corruption", "Unsupported", ...), and the message
is docfeed's (it names the file, sample or parameter).
"""
from __future__ import annotations

from typing import Dict, Type

__all__ = [
    "Error", "InvalidArgumentError", "NotFoundError", "DataError", "StorageError",
    "ResourceExhaustedError", "CancelledError", "InternalError", "AlreadyExistsError",
    "FailedPreconditionError", "LoaderClosedError",
]


class Error(Exception):
    """Base of every docfeed error. `code`: the C++ StatusCode's name."""

    code: str = "Unknown"

    def __init__(self, message: str = "", code: str = "") -> None:
        super().__init__(message)
        if code:
            self.code = code


class InvalidArgumentError(Error, ValueError):
    """A bad argument or option (the message names it and its valid range)."""

    code = "InvalidArgument"


class NotFoundError(Error, FileNotFoundError):
    """A dataset, file or column that does not exist."""

    code = "NotFound"


class DataError(Error, ValueError):
    """Stored data that is corrupt (code "Corruption") or in a form docfeed does not support
    (code "Unsupported")."""

    code = "Corruption"


class StorageError(Error, OSError):
    """A failed read or write of the file system (code "IOError")."""

    code = "IOError"


class ResourceExhaustedError(Error, RuntimeError):
    """A limit was reached, e.g. every batch buffer is held (max_held)."""

    code = "ResourceExhausted"


class CancelledError(Error, RuntimeError):
    """The operation was cancelled."""

    code = "Cancelled"


class InternalError(Error, RuntimeError):
    """A bug in docfeed; please report it with the message."""

    code = "Internal"


class AlreadyExistsError(Error, FileExistsError):
    """The output exists (pass overwrite=True to replace it)."""

    code = "AlreadyExists"


class FailedPreconditionError(Error, RuntimeError):
    """The request does not fit the state, e.g. a dataset preprocessed for another size."""

    code = "FailedPrecondition"


class LoaderClosedError(Error, RuntimeError):
    """The loader (or batch) was closed or released before this call, or close() was called on
    another thread while this call waited (next() is woken at once)."""

    code = "Closed"


# StatusCodeName() (src/base/status.cc) -> class; the extension looks this table up at import.
BY_CODE: Dict[str, Type[Error]] = {
    "InvalidArgument": InvalidArgumentError,
    "NotFound": NotFoundError,
    "Corruption": DataError,
    "Unsupported": DataError,
    "IOError": StorageError,
    "ResourceExhausted": ResourceExhaustedError,
    "Cancelled": CancelledError,
    "Internal": InternalError,
    "AlreadyExists": AlreadyExistsError,
    "FailedPrecondition": FailedPreconditionError,
    "Closed": LoaderClosedError,
}
