"""`inventory draft`: a fix database's records of a release step, drafted from what the
instruments measure (the sweeps, bisection, whole-program regions, load checks)."""
