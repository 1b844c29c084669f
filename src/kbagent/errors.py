"""The one error tree of kbagent.

    KbagentError                    base; ``code`` is a stable machine-readable string
    ├── UserError                   the caller asked for something wrong: fix the request (HTTP 4xx)
    │   ├── InvalidInput            a field is wrong; names the field and the limit (400)
    │   ├── NotFound                a named thing does not exist (404)
    │   ├── Conflict                the request clashes with stored state (409)
    │   │   ├── EmbeddingMismatch   vectors of another model/dimension into a dataset
    │   │   └── SessionBusy         a generation or compaction already runs on the session
    │   ├── DocumentError           a file cannot be ingested (unsupported, empty, corrupt, too big)
    │   └── ConfigError             settings are wrong
    └── RunError                    something failed while doing valid work: retry or fix the service (5xx)
        ├── StorageError            the database failed
        ├── ModelError              a language or embedding model failed (502)
        │   ├── ContextExceeded     the provider said the prompt is over its context window
        │   ├── IncompleteOutput    the reply stopped early (finish_reason=length) or was empty
        │   ├── StructuredOutputError  a required format or tool choice could not be honoured / parsed
        │   └── ProviderUnavailable circuit open, auth/quota failure, or the provider cannot be reached
        │       └── ProviderBusy    rate limit, 408/409/425/5xx, timeout, connection error (retried first)
        ├── SandboxError            the function sandbox cannot run (no Docker, no image, ...) (503)
        └── RunTimeout              a run exceeded its time limit (504)

Only the API's error handler maps these to HTTP statuses (``http_status`` below is the table it reads).
"""

from __future__ import annotations


class KbagentError(Exception):
    code = "INTERNAL_ERROR"
    http_status = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UserError(KbagentError):
    code = "INVALID_REQUEST"
    http_status = 400


class InvalidInput(UserError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class NotFound(UserError):
    code = "NOT_FOUND"
    http_status = 404


class Conflict(UserError):
    code = "CONFLICT"
    http_status = 409


class EmbeddingMismatch(Conflict):
    code = "EMBEDDING_MISMATCH"


class SessionBusy(Conflict):
    code = "SESSION_BUSY"


class DocumentError(UserError):
    code = "DOCUMENT_ERROR"
    http_status = 422


class ConfigError(UserError):
    code = "CONFIG_ERROR"


class RunError(KbagentError):
    code = "INTERNAL_ERROR"
    http_status = 500


class StorageError(RunError):
    code = "STORAGE_ERROR"


class ModelError(RunError):
    code = "LLM_ERROR"
    http_status = 502


class ContextExceeded(ModelError):
    code = "CONTEXT_EXCEEDED"


class IncompleteOutput(ModelError):
    code = "INCOMPLETE_OUTPUT"


class StructuredOutputError(ModelError):
    code = "STRUCTURED_OUTPUT_ERROR"


class ProviderUnavailable(ModelError):
    code = "PROVIDER_UNAVAILABLE"
    http_status = 503


class ProviderBusy(ProviderUnavailable):
    """Transient: the llm client retries these with backoff before they reach a caller."""

    code = "PROVIDER_BUSY"


class SandboxError(RunError):
    code = "SANDBOX_ERROR"
    http_status = 503


class RunTimeout(RunError):
    code = "TIMEOUT"
    http_status = 504
