"""`inventory verify`: check the probe answers against the whole bundle's program."""
