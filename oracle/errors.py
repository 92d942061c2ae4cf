"""The one root of the oracle's user errors.

A user error is bad input or an environment the user can fix (a malformed data file, a release
no catalog lists, an environment variable the tool cannot use, a store that cannot be written):
its message is one line that says what to change, and the command line reports it as that line
and exit code 2, never a traceback. Every such error of `oracle/` derives from
`OracleUserError`; the inventory maps the root, never a list of classes (`inventory/errors.py`),
so a new user error cannot turn into an internal error (exit 4) by being forgotten.

An exception that is not the user's to fix (a worker that died, a result not stored yet, a
defect guarded against) does not derive from it. This module imports nothing: the in-environment
workers import it too.
"""


class OracleUserError(Exception):
    """Bad input or an environment the user can fix; the message is one line for the user
    (exit code 2)."""
