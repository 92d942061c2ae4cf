"""Run by every Python started with this folder on PYTHONPATH (`faults.fault_env`): installs the
fault doubles when a fault variable is set, and does nothing otherwise."""

import os

if (
    os.environ.get("INVENTORY_WORKER_FAULT")
    or os.environ.get("INVENTORY_FAULT")
    or os.environ.get("INVENTORY_ASSET_FAULT")
):
    # a subprocess's path holds this folder (faults.fault_env); the type check knows the module
    # as doubles.faults
    import faults  # type: ignore[import-not-found]

    faults.install()

if os.environ.get("INVENTORY_REMOTE_FAULT"):
    import remote_fs  # type: ignore[import-not-found]

    remote_fs.install()
