"""``kernelproof serve``: submissions over HTTP, a queue in the results store's database,
workers that drain it, and pages for leaderboards, review packets, history and the queue.

Data flows one way: the API (:mod:`~kernelproof.serve.app`) validates a submission and puts it
in the queue (:mod:`~kernelproof.serve.queue`); workers (:mod:`~kernelproof.serve.worker`,
started and watched by :mod:`~kernelproof.serve.supervisor`) claim it, verify it and store the
report with the submission's result in one transaction; the pages read the store.
"""
