"""The local executor: each comparison in this process's pool of per-environment workers, when
asked (the default; it never imports a cluster engine)."""

from __future__ import annotations

from oracle.client import Pool
from oracle.compare import compare
from oracle.envs import Env
from oracle.oracle_api import Oracle
from oracle.results import ProbeResult
from oracle.spec import ProbeSpec


class LocalOracle(Oracle):
    name = "local"

    def __init__(self, pool: Pool) -> None:
        self.pool = pool

    def compare(self, spec: ProbeSpec, old: Env, new: Env, use_cache: bool = True) -> ProbeResult:
        return compare(spec, old, new, self.pool, use_cache=use_cache)
