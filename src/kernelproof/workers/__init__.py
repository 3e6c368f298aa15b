"""Worker processes: the reference worker and the untrusted candidate worker."""
