"""What the controller and the worker processes share, and nothing else: the spec a worker is
started with (``spec``), the typed requests and replies (``requests``, ``messages``) and their
framing on the pipe (``transport``). Both sides import this package; neither side's code lives
here."""
