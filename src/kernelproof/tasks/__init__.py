"""Tasks: the trusted reference, its shape knobs, and the inputs a variant asks for."""
