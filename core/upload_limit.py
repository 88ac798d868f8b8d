"""A cap on the bytes a request may upload, enforced while the body streams in.

Django's DATA_UPLOAD_MAX_MEMORY_SIZE leaves file parts out, and FILE_UPLOAD_MAX_MEMORY_SIZE only moves a
large file from memory to a temporary file: neither stops a file of any size from being stored. This
handler, put first in a request's `upload_handlers`, counts the file bytes as they arrive and stops the
upload past the limit, so no handler after it stores them.
"""

from __future__ import annotations

from typing import Any

from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from django.http import HttpRequest


class LimitedUploadHandler(FileUploadHandler):
    """Stops an upload whose files together exceed `limit` bytes; `refused` then says so to the view.

    The rest of the body is read and thrown away rather than left unread (StopUpload without
    connection_reset): a browser still sending when the server answers and closes would show a
    connection error instead of the page that says why.
    """

    def __init__(self, request: HttpRequest, *, limit: int) -> None:
        super().__init__(request)
        self.limit = limit
        self.received = 0
        self.refused = False
        self.declared = 0

    def handle_raw_input(
        self,
        input_data: Any,
        META: dict[str, Any],
        content_length: int,
        boundary: str,
        encoding: str | None = None,
    ) -> None:
        # A body declared larger than the limit plus room for the form's other fields cannot fit: it is
        # refused when its first file part starts, before any of it is stored.
        self.declared = content_length

    def new_file(self, *args: Any, **kwargs: Any) -> None:
        super().new_file(*args, **kwargs)
        if self.refused or self.declared > self.limit + 1024**2:
            self.refused = True
            raise StopUpload(connection_reset=False)

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        self.received += len(raw_data)
        if self.received > self.limit:
            self.refused = True
            raise StopUpload(connection_reset=False)
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None


def upload_limit_install(request: HttpRequest, *, limit: int) -> LimitedUploadHandler:
    """Put a limit in front of the request's upload handlers; call before anything reads request.POST
    (the view must be csrf_exempt and check CSRF itself, as Django's docs on upload handlers say)."""
    handler = LimitedUploadHandler(request, limit=limit)
    # Assigned, not inserted: Django refuses the assignment once the body has been read, loudly.
    request.upload_handlers = [handler, *request.upload_handlers]
    return handler
