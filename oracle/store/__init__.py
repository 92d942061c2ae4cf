"""The result store: results keyed by everything that can change them, their load-check records,
the remote tier behind it (object storage), what it holds and takes on disk, and its
housekeeping.
"""
