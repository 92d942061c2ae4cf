"""Where comparisons run: the oracle interface, the comparison itself (convert both, normalise,
measure), the local executor, the Ray executor and its node agent, and the choice between them.
"""
