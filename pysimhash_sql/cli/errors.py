"""The one kind of error the command line reports as a message, not a traceback."""


class UserError(Exception):
    """A mistake in the input, the arguments or the database the user named:
    printed as ``pysimhash-sql: <message>`` with exit status 1."""
