"""The errors of the command line: the one kind it reports as a message, not
a traceback (UserError), and an input it skips (NotText)."""


class UserError(Exception):
    """A mistake in the input, the arguments or the database the user named:
    printed as ``pysimhash-sql: <message>`` with exit status 1."""


class NotText(Exception):
    """A file, or a JSON Lines record, that cannot be read as text: why, for
    the report, and the reason the summary counts it under."""

    def __init__(self, message: str, reason: str = "not text") -> None:
        super().__init__(message)
        self.reason = reason
