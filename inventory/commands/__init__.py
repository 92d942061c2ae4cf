"""The commands: one module per command (its options, its docstring as help, one call to a
service, one renderer), registered in one place, `inventory/cli.py`, through one wrapper,
`inventory.terminal.command` (every error becomes one line and an exit code; the environment's
settings are checked first).

A reporting command's body has one shape (`common.py`): its flags checked (`ready`), its inputs
read, then `report`: the service under a progress line, the result in the chosen format
(`inventory/output.py`) and its warnings on stderr; the exit code last (`inventory/errors.py`).
Services are imported inside the command, so `--help` does not load them.
"""
